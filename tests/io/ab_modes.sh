# The in-process A/B programs of run_io_bench.sh and ab_builds.sh (sourced, not run).
# AB_MODES: their names; ab_command MODE BENCH DATA FILES sets the array cmd to MODE's command
# line: bench_io's files-ab/files-ab-mt on FILES files of DATA, loop-ab/loop-ab-mt on 32 x FILES
# reads, py_ab.py with and without an idle thread.
AB_ALL_MODES="files-ab files-ab-mt loop-ab loop-ab-mt py-ab py-ab-mt"
AB_MODES=${AB_MODES:-$AB_ALL_MODES}
for _m in $AB_MODES; do
  case " $AB_ALL_MODES " in
    *" $_m "*) ;;
    *) echo "AB_MODES: no mode '$_m' (modes: $AB_ALL_MODES)" >&2; exit 2;;
  esac
done
unset _m
ab_command() {
  local here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  case $1 in
    files-ab*) cmd=("$2" "$1" "$3" "$4");;
    loop-ab*) cmd=("$2" "$1" "$3" $(($4 * 32)));;
    py-ab) cmd=(python3 "$here/py_ab.py" "$3" "$4");;
    py-ab-mt) cmd=(python3 "$here/py_ab.py" "$3" "$4" --idle-thread);;
  esac
}
