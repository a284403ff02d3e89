#!/usr/bin/env bash
# How long EvoKit takes to install and to test, as a user runs it:
#
#   1. a fresh `pip install .` (no build directory yet) into a fresh venv;
#   2. the same `pip install .` again with nothing changed (the persistent
#      build directory is reused);
#   3. the README's test command (the second command at its top), verbatim,
#      in the same venv, from a checkout with no build directory.
#
#   bash bench/install_times.sh [--no-test] [--python PYTHON] [--keep DIR]
#
# Each step runs in a copy of this checkout (its tracked files as they are in
# the work tree) in a temporary directory, so the checkout's own build
# directories are neither used nor touched. The venv sees the system
# site-packages (every dependency is already there: the figures are the
# build's and the tests', not downloads'). Prints, for each step, the wall
# time and the CPU time (user + sys, of every process it ran) from
# /usr/bin/time; on a shared machine quote the CPU time beside the wall time.
set -euo pipefail

run_tests=1
python=${PYTHON:-python3}
keep=""
while (($#)); do
  case $1 in
    --no-test) run_tests=0 ;;
    --python) python=$2; shift ;;
    --keep) keep=$2; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "install_times.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

src=$(cd "$(dirname "$0")/.." && pwd)
work=${keep:-$(mktemp -d -t evokit-install-times-XXXXXX)}
mkdir -p "$work"
[[ -n $keep ]] || trap 'rm -rf "$work"' EXIT

# The README's test command: the line after its second ```bash fence.
test_command=$(awk '/^```bash$/ {n++; getline; if (n == 2) {print; exit}}' "$src/README.md")
[[ $test_command == pip\ install* ]] ||
  { echo "install_times.sh: no test command found in $src/README.md" >&2; exit 1; }

copy_checkout() {  # DEST
  bash "$src/scripts/copy_checkout.sh" "$1"
}

# time_step NAME DIR COMMAND...: runs COMMAND in DIR with the venv first on PATH.
time_step() {
  local name=$1 dir=$2
  shift 2
  local log="$work/$name.log" times="$work/$name.time"
  local status=0
  (cd "$dir" && PATH="$work/venv/bin:$PATH" VIRTUAL_ENV="$work/venv" \
     /usr/bin/time -f '%e %U %S' -o "$times" "$@") >"$log" 2>&1 || status=$?
  read -r wall user sys < <(tail -n 1 "$times")  # after "Command exited with non-zero status N"
  printf '%-22s wall %7.1f s   cpu (user+sys) %7.1f s   exit %d   (log: %s)\n' \
    "$name" "$wall" "$(echo "$user + $sys" | bc)" "$status" "$log"
}

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); python: $("$python" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
"$python" -m venv --system-site-packages "$work/venv"
# pytest's command in the venv itself, as a venv without the system
# site-packages has it: else `pytest` on PATH is the system's (with pyenv, a
# shim that runs pyenv's Python, not the venv's).
"$work/venv/bin/pip" install -q --no-deps --ignore-installed pytest >/dev/null
echo "pip: $("$work/venv/bin/pip" --version | cut -d' ' -f1-2); ccache: $(command -v ccache || echo none)"

copy_checkout "$work/src"
time_step fresh_install "$work/src" pip install --no-deps .
time_step noop_reinstall "$work/src" pip install --no-deps .

if ((run_tests)); then
  copy_checkout "$work/src_test"
  echo "test command: $test_command"
  time_step test_command "$work/src_test" bash -c "$test_command"
fi
