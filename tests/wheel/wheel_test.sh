#!/usr/bin/env bash
# The wheel, as a user gets it: built once (scripts/build-wheel), installed with pip into a fresh
# virtual environment, then its console script, `python -m cudnn_fastpath` and Python API run from
# there, the demo under the installed launcher against the stub libcudnn, and a broken install.
#   wheel_test.sh SOURCE_DIR WORK_DIR DEMO STUB_LIBCUDNN
set -euo pipefail
source_dir=$1 work=$2 demo=$3 stub=$4
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
failures=0
fail() {
  printf 'FAILED: %s\n' "$*"
  failures=$((failures + 1))
}
# check WHAT GOT WANTED
check() {
  if [[ $2 == "$3" ]]; then printf 'ok: %s\n' "$1"; else fail "$1: got '$2', wanted '$3'"; fi
}

rm -rf "$work"
mkdir -p "$work"
python=/usr/bin/python3
[[ -x $python ]] || python=python3

wheel=$("$source_dir/scripts/build-wheel" --out "$work/dist" | tail -n 1)
[[ -f $wheel ]] || { echo "FAILED: scripts/build-wheel made no wheel"; exit 1; }
[[ ${wheel##*/} == cudnn_fastpath-*-py3-none-manylinux_2_28_x86_64.whl ]] || fail "wheel name ${wheel##*/}"
version=${wheel##*/cudnn_fastpath-}
version=${version%%-*}

"$python" -m venv "$work/venv"
bin=$work/venv/bin
"$bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --no-index "$wheel"
package=$("$bin/python" -c 'import os, cudnn_fastpath; print(os.path.dirname(cudnn_fastpath.__file__))')
shim=$package/libcudnn_fastpath.so

check "cudnn-fastpath --version" "$("$bin/cudnn-fastpath" --version)" "cudnn-fastpath $version"
check "cudnn_fastpath.__version__" "$("$bin/python" -c 'import cudnn_fastpath; print(cudnn_fastpath.__version__)')" "$version"
check "python -m cudnn_fastpath --print-path" "$("$bin/python" -m cudnn_fastpath --print-path)" "$shim"
check "cudnn-fastpath --print-path" "$("$bin/cudnn-fastpath" --print-path)" "$shim"
check "cudnn_fastpath.shim_path()" "$("$bin/python" -c 'import cudnn_fastpath; print(cudnn_fastpath.shim_path())')" "$shim"
# LD_PRELOAD: the package's shim first and once (another copy of the shim dropped), the rest kept;
# the variable the entry points pass to the script does not reach the program.
# Real files, so that ld.so loads them quietly into the launcher's own processes.
mkdir -p "$work/elsewhere"
cp "$shim" "$work/elsewhere/"
check "LD_PRELOAD under the installed launcher" \
  "$(LD_PRELOAD="$work/elsewhere/libcudnn_fastpath.so libm.so.6" "$bin/cudnn-fastpath" printenv LD_PRELOAD)" \
  "$shim:libm.so.6"
check "LD_PRELOAD under python -m cudnn_fastpath" \
  "$("$bin/python" -m cudnn_fastpath printenv LD_PRELOAD)" "$shim"
check "the program's environment" "$("$bin/cudnn-fastpath" env | grep -c '^CUDNN_FASTPATH_PACKAGE_SHIM=' || true)" 0
set +e
"$bin/cudnn-fastpath" sh -c 'exit 7'
status=$?
set -e
check "the program's exit status" "$status" 7

# The demo on the stub, under the installed launcher: most SetStream calls never reach the library.
"$bin/cudnn-fastpath" --stats "$demo" --stub --rounds 3 >"$work/demo.out" 2>"$work/demo.err" ||
  fail "the demo under cudnn-fastpath: exit status $?"
grep -qF "shim: preloaded ($shim)" "$work/demo.out" || fail "the demo did not see the package's shim preloaded"
read -r made reached < <(sed -n 's/^  with shim: *\([0-9]*\) made, \([0-9]*\) reached.*/\1 \2/p' "$work/demo.out")
if [[ -n ${made:-} ]] && ((reached * 10 < made)); then
  printf 'ok: the demo under the installed launcher (%s made, %s reached cuDNN)\n' "$made" "$reached"
else
  fail "the demo under the installed launcher: made=${made:-?} reached=${reached:-?}"
fi
grep -q '^cudnn-fastpath: .*cudnnSetStream' "$work/demo.err" || fail "no statistics on stderr: $(cat "$work/demo.err")"

# The Python API without the shim, with it and statistics on, with it and statistics off.
api() {
  local what=$1
  shift
  if out=$("$@" 2>&1); then
    printf 'ok: %s: %s\n' "$what" "$out"
  else
    fail "$what: $out"
  fi
}
api "the Python API without the shim" "$bin/python" "$here/api_check.py" without
api "the Python API under cudnn-fastpath --stats" "$bin/cudnn-fastpath" --stats "$bin/python" "$here/api_check.py" counting "$stub"
api "the Python API under python -m cudnn_fastpath" "$bin/python" -m cudnn_fastpath "$bin/python" "$here/api_check.py" not-counting "$stub"

# A broken install: the shim gone from the package. One line, exit status 1, the program never run.
rm -f "$shim"
for launcher in "$bin/cudnn-fastpath" "$bin/python -m cudnn_fastpath"; do
  set +e
  # shellcheck disable=SC2086 # the second launcher is two words
  $launcher touch "$work/ran" >"$work/broken.out" 2>"$work/broken.err"
  status=$?
  set -e
  if ((status == 1)) && [[ ! -e $work/ran && ! -s $work/broken.out ]] && (($(wc -l <"$work/broken.err") == 1)) &&
    grep -q '^cudnn-fastpath: broken install: .*libcudnn_fastpath.so is missing' "$work/broken.err"; then
    printf 'ok: a broken install under %s: %s' "${launcher##*/}" "$(cat "$work/broken.err")"
    echo
  else
    fail "a broken install under $launcher: status $status, ran: $([[ -e $work/ran ]] && echo yes || echo no), stderr: $(cat "$work/broken.err")"
  fi
done

if ((failures)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "every wheel check passed"
