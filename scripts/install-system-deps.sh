#!/usr/bin/env bash
# Installs the Debian packages the test hosts and the demo host need: rootful podman with runc,
# mmdebstrap for the image rootfs, unzip and python3-venv for scripts/bootstrap.sh; and Chromium,
# in which the suite opens the sweep's report.html (tests/unit/test_sweep_report_browser.py).
# Idempotent: when every package is already installed it only runs dpkg-query and exits.
set -euo pipefail

packages=(
  podman runc conmon catatonit uidmap slirp4netns fuse-overlayfs
  containernetworking-plugins iptables
  mmdebstrap unzip python3-venv
)
# without its recommends (fonts and desktop integration a headless test does not use)
lean=(chromium)

missing=()
missing_lean=()
for p in "${packages[@]}" "${lean[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  if [ "$status" != installed ]; then
    if [[ " ${lean[*]} " == *" $p "* ]]; then missing_lean+=("$p"); else missing+=("$p"); fi
  fi
done

if [ $((${#missing[@]} + ${#missing_lean[@]})) -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-system-deps: missing ${missing[*]} ${missing_lean[*]}; run as root (or install them yourself)" >&2
  exit 1
fi

echo "install-system-deps: installing ${missing[*]} ${missing_lean[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# Recommends stay on: the test hosts were validated with podman's recommended packages
# (netavark, aardvark-dns, ...); a podman without them is untested here.
[ ${#missing[@]} -eq 0 ] || apt-get install -y -qq "${missing[@]}" >/dev/null
[ ${#missing_lean[@]} -eq 0 ] || apt-get install -y -qq --no-install-recommends "${missing_lean[@]}" >/dev/null
echo "install-system-deps: done"
