#!/usr/bin/env bash
# Builds, on the controller, the wheelhouse that roles/sglang_host installs from offline
# (pip install --no-index --find-links): a directory of wheels for the GPU host's Python and platform,
# never the controller's. Air-gapped hosts need nothing but this directory.
#
#   scripts/build-wheelhouse.sh [--dest DIR] [--python 3.11] [--glibc 2.36] [--arch x86_64]
#                               [--sglang-version 0.5.23 | --fake-sglang | --lock FILE] [--no-bench]
#                               [REQUIREMENT...]
#
#   --dest            output directory (default cache/sglang-wheelhouse; cache/wheelhouse is sglang_bench's); replaced whole, atomically
#   --python, --glibc the host's CPython and glibc (Debian 12: 3.11 and 2.36): cp311 manylinux wheels
#   --sglang-version  pinned SGLang downloaded with all its dependencies (several GB)
#   --fake-sglang     TEST ONLY: the emulator-backed sglang 0.5.23 of tests/fake_sglang instead
#   --lock FILE       exactly the pins of FILE, without their dependencies, and FILE itself as
#                     requirements.lock (sglang_host_wheelhouse_locked installs from it with --no-deps)
#   --no-bench        leave out this project's benchmark package (sglang-specbench) and its deps
#   REQUIREMENT       extra packages, e.g. the drafter's (pinned requirement strings)
#
# Idempotent: nothing is done when DIR/.stamp matches the arguments and the local sources.
set -euo pipefail
cd "$(dirname "$0")/.."

dest=cache/sglang-wheelhouse
python_version=3.11
glibc=2.36
arch=x86_64
sglang_version=0.5.23
fake=0
lock=
bench=1
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dest) dest=$2; shift 2 ;;
    --python) python_version=$2; shift 2 ;;
    --glibc) glibc=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --sglang-version) sglang_version=$2; shift 2 ;;
    --fake-sglang) fake=1; shift ;;
    --lock) lock=$2; shift 2 ;;
    --no-bench) bench=0; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "build-wheelhouse: unknown option $1" >&2; exit 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done

PY=${PYTHON:-$PWD/.venv/bin/python}
[ -x "$PY" ] || PY=python3
abi=cp${python_version/./}
platform=manylinux_${glibc/./_}_$arch
# pip takes --platform literally: a host with glibc 2.36 also runs every older manylinux wheel,
# and most wheels carry only an older tag (manylinux_2_17, manylinux2014, ...).
platform_args=(--platform any)
for minor in $(seq "${glibc#*.}" -1 5); do platform_args+=(--platform "manylinux_2_${minor}_$arch"); done
platform_args+=(--platform "manylinux2014_$arch" --platform "manylinux2010_$arch" --platform "manylinux1_$arch")

# The stamp covers the arguments and every local source that ends up in a wheel.
local_sources=()
[ "$bench" = 1 ] && local_sources+=(pyproject.toml bench)
[ "$fake" = 1 ] && local_sources+=(tests/fake_sglang tests/emulator/sglang_emulator)
[ -n "$lock" ] && local_sources+=("$lock")
want=$(
  {
    printf '%s\n' "$python_version" "$glibc" "$arch" "$sglang_version" "$fake" "$bench" "${extra[@]}"
    if [ ${#local_sources[@]} -gt 0 ]; then
      find "${local_sources[@]}" -type f ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 \
        | sort -z | xargs -0 sha256sum
    fi
  } | sha256sum | cut -d' ' -f1
)
if [ -f "$dest/.stamp" ] && [ "$(cat "$dest/.stamp")" = "$want" ]; then
  echo "build-wheelhouse: $dest is up to date"
  exit 0
fi

mkdir -p "$(dirname "$dest")"
tmp=$(mktemp -d "$(dirname "$dest")/.wheelhouse.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/wheels"
start=$SECONDS

requirements=("${extra[@]}")
if [ "$fake" = 1 ]; then
  "$PY" tests/fake_sglang/build_wheel.py "$tmp/wheels" >/dev/null
elif [ -n "$lock" ]; then
  "$PY" -m pip download -q --disable-pip-version-check --only-binary=:all: --no-deps \
    --python-version "$python_version" --implementation cp --abi "$abi" --abi abi3 --abi none \
    "${platform_args[@]}" \
    -d "$tmp/wheels" -r "$lock"
  grep -vE '^\s*(#|$)' "$lock" > "$tmp/wheels/requirements.lock"
else
  requirements+=("sglang==$sglang_version")
fi
if [ "$bench" = 1 ]; then
  # Built from a copy: a build in the working tree would leave build/ and *.egg-info behind.
  mkdir "$tmp/src"
  cp -r pyproject.toml bench "$tmp/src/"
  find "$tmp/src" -name __pycache__ -prune -exec rm -rf {} +
  "$PY" -m pip wheel -q --disable-pip-version-check --no-deps \
    -w "$tmp/wheels" "$tmp/src"
  requirements+=("$(ls "$tmp"/wheels/sglang_specbench-*.whl)")
fi

if [ ${#requirements[@]} -gt 0 ]; then
  # Wheels for the host (binary only: nothing may need a compiler there), not for the controller.
  "$PY" -m pip download -q --disable-pip-version-check --only-binary=:all: \
    --python-version "$python_version" --implementation cp --abi "$abi" --abi abi3 --abi none \
    "${platform_args[@]}" \
    -d "$tmp/wheels" "${requirements[@]}"
fi

echo "$want" > "$tmp/wheels/.stamp"
rm -rf "$dest"
mv "$tmp/wheels" "$dest"
echo "build-wheelhouse: $dest ($(find "$dest" -name '*.whl' | wc -l) wheels for $abi $platform)" \
  "in $((SECONDS - start)) s"
