# shellcheck shell=bash
# What count-lines and count-process share (sourced, after they set `default_kinds`): the
# arguments [BUILD_DIR] [OPS] [KINDS], the program (op_lines), a work folder, and per_op, which
# turns what a run of N ops prints into what one op costs.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build="${1:-$root/build}"
ops="${2:-300}"
# shellcheck disable=SC2034 # read by the script that sources this
kinds="${3:-$default_kinds}"
program="$build/bench/shim/op_lines"
script=$(basename "$0")
command -v valgrind >/dev/null || { echo "$script: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
[[ -x $program ]] || { echo "$script: $program not built" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs COMMAND N ARGS... for N = OPS and N = 2 x OPS, each printing numbers on one line, and prints
# their differences divided by OPS: what one op costs, the set-up, the warm-up and the first ops
# cancelled.
per_op() {  # command, then its arguments after N
  local command=$1 short long
  shift
  short=$("$command" "$ops" "$@")
  long=$("$command" $((2 * ops)) "$@")
  python3 -c '
import sys
ops, short, long = int(sys.argv[1]), sys.argv[2].split(), sys.argv[3].split()
print(" ".join(repr((int(l) - int(s)) / ops) for s, l in zip(short, long)))
' "$ops" "$short" "$long"
}
