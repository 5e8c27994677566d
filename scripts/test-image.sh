#!/usr/bin/env bash
# Builds the systemd test-host image localhost/sglang-testhost:bookworm (molecule scenarios and the
# demo host run it). A Debian bookworm minbase rootfs made by mmdebstrap is cached as a tarball in
# cache/ and imported with /sbin/init as its command. Idempotent: nothing is done when the tarball
# and an image labelled with the same recipe hash both exist.
set -euo pipefail
cd "$(dirname "$0")/.."
export CONTAINERS_CONF=${CONTAINERS_CONF:-$PWD/tests/podman/containers.conf}

IMAGE=${TESTHOST_IMAGE:-localhost/sglang-testhost:bookworm}
SUITE=bookworm
# python3-venv and python3-pip: provisioning roles build venvs on the host from local wheels,
# offline. haproxy: the load balancer of molecule deploy (a host of its own there, which enables it);
# disabled in the image, since its unit's BindReadOnlyPaths= cannot be set up in a container.
PACKAGES=(
  systemd systemd-sysv dbus python3 python3-venv python3-pip python3-apt
  sudo iproute2 procps curl ca-certificates haproxy
)
# Everything that changes the rootfs goes into the hash; bump RECIPE_REV when editing other options.
RECIPE_REV=2
include=$(IFS=,; echo "${PACKAGES[*]}")
hash=$(printf '%s\n' "$RECIPE_REV" "$SUITE" minbase "$include" | sha256sum | cut -c1-16)
tarball=cache/sglang-testhost-$SUITE-$hash.tar
label=org.sglang-specbench.testhost-recipe

mkdir -p cache
# Serialise concurrent callers (make molecule and make demo may run side by side).
exec 9>cache/.test-image.lock
flock 9

image_hash=$(podman image inspect --format "{{ index .Labels \"$label\" }}" "$IMAGE" 2>/dev/null \
  || true)
if [ -f "$tarball" ] && [ "$image_hash" = "$hash" ]; then
  exit 0
fi

if [ ! -f "$tarball" ]; then
  echo "test-image: building rootfs $tarball (mmdebstrap, about a minute)"
  start=$SECONDS
  rm -rf cache/sglang-testhost-"$SUITE"-*.tar cache/*.tar.partial
  # No mirror argument: mmdebstrap then uses this machine's own apt sources.
  mmdebstrap --quiet --format=tar --variant=minbase --include="$include" \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --customize-hook='rm -f "$1"/etc/systemd/system/multi-user.target.wants/haproxy.service' \
    "$SUITE" "$tarball.partial"
  mv "$tarball.partial" "$tarball"
  echo "test-image: rootfs built in $((SECONDS - start)) s"
fi

echo "test-image: importing $IMAGE"
start=$SECONDS
podman import --quiet \
  --change 'CMD ["/sbin/init"]' \
  --change "LABEL $label=$hash" \
  --change 'STOPSIGNAL SIGRTMIN+3' \
  "$tarball" "$IMAGE" >/dev/null
echo "test-image: imported in $((SECONDS - start)) s"
