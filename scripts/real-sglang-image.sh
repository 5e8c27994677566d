#!/usr/bin/env bash
# Builds the real-SGLang test host image localhost/sglang-realhost:cpu: the systemd test image plus
# the REAL SGLang 0.5.23 (CPU torch), installed by the sglang_host role from a controller-built
# wheelhouse with --no-index, plus the test-only stand-ins and a tiny model (tests/real_sglang/).
# Cached: nothing is done when an image labelled with the same recipe hash exists (the hash covers
# the lock file, the files the image is made of, the role and the base image's recipe).
set -euo pipefail
cd "$(dirname "$0")/.."
export CONTAINERS_CONF=${CONTAINERS_CONF:-$PWD/tests/podman/containers.conf}
export PATH=$PWD/${VENV:-.venv}/bin:$PATH
[ -n "${CI:-}" ] && export NO_COLOR=1 ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0

IMAGE=${REALHOST_IMAGE:-localhost/sglang-realhost:cpu}
BASE=${TESTHOST_IMAGE:-localhost/sglang-testhost:bookworm}
LOCK=tests/real_sglang/requirements.lock
WHEELHOUSE=cache/real-sglang-wheelhouse
BUILDER=sglang-realhost-build
label=org.sglang-specbench.realhost-recipe

mkdir -p cache
exec 9>cache/.real-sglang-image.lock
flock 9

# No image at all (a fresh machine): it is built below, so its wheelhouse (downloads, GBs) is fetched
# while the base image builds. A failure here is met again by the build's own call, which stops there.
wheels=
if ! podman image exists "$IMAGE"; then
  bash scripts/build-wheelhouse.sh --lock "$LOCK" --no-bench --dest "$WHEELHOUSE" & wheels=$!
fi
bash scripts/test-image.sh
[ -z "$wheels" ] || wait "$wheels" || true
base_hash=$(podman image inspect --format '{{ index .Labels "org.sglang-specbench.testhost-recipe" }}' "$BASE")
hash=$(
  {
    echo "$base_hash"
    # What goes into the image, nothing else (the fixture recorder, for one, does not).
    find "$LOCK" tests/real_sglang/image.yml tests/real_sglang/make_tiny_model.py tests/real_sglang/standins \
      tests/fakes/nvidia-smi roles/sglang_host scripts/real-sglang-image.sh \
      -type f ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 | sort -z | xargs -0 sha256sum
  } | sha256sum | cut -c1-16
)

have=$(podman image inspect --format "{{ index .Labels \"$label\" }}" "$IMAGE" 2>/dev/null || true)
if [ "$have" = "$hash" ]; then
  exit 0
fi

start=$SECONDS
echo "real-sglang-image: building $IMAGE ($hash)"
bash scripts/build-wheelhouse.sh --lock "$LOCK" --no-bench --dest "$WHEELHOUSE"

podman rm -f -t 0 "$BUILDER" >/dev/null 2>&1 || true
trap 'podman rm -f -t 0 "$BUILDER" >/dev/null 2>&1 || true' EXIT
podman run -d --name "$BUILDER" --cap-add SYS_PTRACE --systemd always "$BASE" /sbin/init >/dev/null

# An inventory, not -e: extra vars would also send the role's delegate_to: localhost tasks into the container.
inventory=$(mktemp --suffix=.yml)
trap 'podman rm -f -t 0 "$BUILDER" >/dev/null 2>&1 || true; rm -f "$inventory"' EXIT
printf '%s\n' "all:" "  hosts:" "    $BUILDER:" "      ansible_connection: containers.podman.podman" \
  "      ansible_python_interpreter: /usr/bin/python3" > "$inventory"
ansible-playbook -i "$inventory" tests/real_sglang/image.yml

podman stop -t 30 "$BUILDER" >/dev/null
podman commit --quiet \
  --change 'CMD ["/sbin/init"]' \
  --change "LABEL $label=$hash" \
  --change 'STOPSIGNAL SIGRTMIN+3' \
  "$BUILDER" "$IMAGE" >/dev/null
# Old builds of the image would pile up at several GB each.
podman image prune -f >/dev/null 2>&1 || true
echo "real-sglang-image: $IMAGE built in $((SECONDS - start)) s"
