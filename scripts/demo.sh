#!/usr/bin/env bash
# The demo host lifecycle.
#   scripts/demo.sh [up] [ansible-playbook args...]
#       builds whatever is missing (system packages, .venv, test image), starts or reuses the
#       long-lived systemd container `sglang-demo` (127.0.0.1:18080 -> its port 30000), waits for
#       its systemd, runs playbooks/demo.yml against inventory/demo (the emulator in place of
#       SGLang, served by sglang_server), then the main job: sweep.yml with the demo sweep defaults
#       (inventory/demo/group_vars/sglang_servers/sweep.yml), ending with its report. The
#       ansible-playbook args go to the sweep (e.g. -e budget=8); a rerun resumes the sweep.
#   scripts/demo.sh down
#       removes the container.
set -euo pipefail
cd "$(dirname "$0")/.."
export CONTAINERS_CONF=${CONTAINERS_CONF:-$PWD/tests/podman/containers.conf}
export PATH=$PWD/${VENV:-.venv}/bin:$PATH

NAME=sglang-demo
IMAGE=${TESTHOST_IMAGE:-localhost/sglang-testhost:bookworm}
PUBLISH=127.0.0.1:18080:30000
# Root on a real GPU host can read every process's /proc/PID/fd (sglang_ready checks who owns the
# port that way); podman drops CAP_SYS_PTRACE by default, so give it back.
RUN_OPTS=(--hostname "$NAME" --systemd=always --cap-add SYS_PTRACE -p "$PUBLISH")
SPEC_LABEL=org.sglang-specbench.demo-spec
BOOT_TIMEOUT=${DEMO_BOOT_TIMEOUT:-90}

action=${1:-up}
[ $# -gt 0 ] && shift

container_exists() { podman container exists "$NAME"; }

down() {
  if container_exists; then
    podman rm -f -t 10 "$NAME" >/dev/null
    echo "demo: $NAME removed"
  else
    echo "demo: $NAME is not there"
  fi
}

wait_for_systemd() {
  local state="" waited=0
  while [ "$waited" -lt "$BOOT_TIMEOUT" ]; do
    state=$(podman exec "$NAME" systemctl is-system-running 2>/dev/null || true)
    case "$state" in
      running) return 0 ;;
      degraded)
        echo "demo: systemd in $NAME is degraded; failed units:" >&2
        podman exec "$NAME" systemctl --failed --no-legend >&2 || true
        return 0 ;;
    esac
    sleep 1
    waited=$((waited + 1))
  done
  echo "demo: systemd in $NAME not running after ${BOOT_TIMEOUT} s (state: ${state:-none})" >&2
  podman logs --tail 50 "$NAME" >&2 || true
  return 1
}

up() {
  bash scripts/install-system-deps.sh
  bash scripts/bootstrap.sh
  bash scripts/test-image.sh

  local spec have running
  # The container is reused only when made from the same image with the same options.
  spec=$( (podman image inspect --format '{{.Id}}' "$IMAGE"; printf '%s\n' "${RUN_OPTS[@]}") \
    | sha256sum | cut -c1-16)
  if container_exists; then
    have=$(podman container inspect --format "{{ index .Config.Labels \"$SPEC_LABEL\" }}" "$NAME")
    if [ "$have" != "$spec" ]; then
      echo "demo: $NAME was made from another image or other options, recreating it"
      podman rm -f -t 10 "$NAME" >/dev/null
    fi
  fi

  if ! container_exists; then
    # Rootful podman publishes a port with DNAT rules and lets a second container publish it too;
    # the two would then answer for each other.
    if podman ps --format '{{.Names}} {{.Ports}}' | grep -q '127\.0\.0\.1:18080->'; then
      echo "demo: 127.0.0.1:18080 is published by another container (a molecule run?):" >&2
      podman ps --format '  {{.Names}} {{.Ports}}' | grep '127\.0\.0\.1:18080->' >&2
      return 1
    fi
    echo "demo: starting $NAME from $IMAGE"
    if ! podman run -d --name "$NAME" "${RUN_OPTS[@]}" --label "$SPEC_LABEL=$spec" \
      "$IMAGE" /sbin/init >/dev/null; then
      echo "demo: could not start $NAME; is 127.0.0.1:18080 taken (a molecule run)?" >&2
      podman rm -f -t 0 "$NAME" >/dev/null 2>&1 || true
      return 1
    fi
  else
    running=$(podman container inspect --format '{{.State.Running}}' "$NAME")
    if [ "$running" != true ]; then
      echo "demo: restarting the stopped $NAME"
      podman start "$NAME" >/dev/null
    else
      echo "demo: reusing the running $NAME"
    fi
  fi

  wait_for_systemd
  ansible-playbook -i inventory/demo/hosts.yml playbooks/demo.yml
  ansible-playbook -i inventory/demo/hosts.yml sweep.yml "$@"
}

case "$action" in
  up) up "$@" ;;
  down) down ;;
  *)
    echo "usage: $0 [up [ansible-playbook args...] | down]" >&2
    exit 2 ;;
esac
