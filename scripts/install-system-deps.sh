#!/usr/bin/env bash
# Installs the Debian packages the test hosts and the demo host need: rootful podman with runc,
# mmdebstrap for the image rootfs, unzip and python3-venv for scripts/bootstrap.sh.
# Idempotent: when every package is already installed it only runs dpkg-query and exits.
set -euo pipefail

packages=(
  podman runc conmon catatonit uidmap slirp4netns fuse-overlayfs
  containernetworking-plugins iptables
  mmdebstrap unzip python3-venv
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = installed ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-system-deps: missing ${missing[*]}; run as root (or install them yourself)" >&2
  exit 1
fi

echo "install-system-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# Recommends stay on: the test hosts were validated with podman's recommended packages
# (netavark, aardvark-dns, ...); a podman without them is untested here.
apt-get install -y -qq "${missing[@]}" >/dev/null
echo "install-system-deps: done"
