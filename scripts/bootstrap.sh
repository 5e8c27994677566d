#!/usr/bin/env bash
# Creates (or refreshes) the controller virtual environment in .venv and the collections in ./collections.
# Idempotent and fast when nothing changed: a stamp records the hash of the lock files.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
PY=${PYTHON:-python3}
stamp="$VENV/.bootstrap-stamp"
want=$(cat requirements/controller.lock requirements/collections.txt pyproject.toml | sha256sum | cut -d' ' -f1)

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d collections/ansible_collections ]; then
  exit 0
fi

[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r requirements/controller.lock
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e .

# Collections: Galaxy is unreachable, so take them from the `ansible` wheel on PyPI.
pin=$(grep -E '^ansible==' requirements/collections.txt)
mapfile -t wanted < <(grep -E '^[a-z_]+/[a-z_]+$' requirements/collections.txt)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$VENV/bin/python" -m pip download -q --disable-pip-version-check --no-deps "$pin" -d "$tmp"
rm -rf collections.new && mkdir -p collections.new
patterns=()
for c in "${wanted[@]}"; do patterns+=("ansible_collections/$c/*"); done
(cd collections.new && unzip -q "$tmp"/ansible-*.whl "${patterns[@]}")
rm -rf collections && mv collections.new collections

echo "$want" > "$stamp"
echo "bootstrap: $VENV and collections ready"
