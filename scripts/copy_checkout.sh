#!/usr/bin/env bash
# Copies this checkout's files, as they are in the work tree, into DEST: what
# git tracks and the new files it does not ignore, so no build directory, no
# wheel, no cache. Outside a git checkout: every file but build-py/, build/
# and dist/.
#
#   bash scripts/copy_checkout.sh DEST        (DEST is emptied first)
set -euo pipefail
if (($# != 1)); then
  echo "usage: $0 DEST" >&2
  exit 2
fi
src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$1"
mkdir -p "$1"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  (cd "$src" && git ls-files -z --cached --others --exclude-standard |
     xargs -0 tar -cf - --no-recursion --ignore-failed-read) | tar -xf - -C "$1"
else
  tar -C "$src" --exclude=./build-py --exclude=./build --exclude=./dist -cf - . | tar -xf - -C "$1"
fi
