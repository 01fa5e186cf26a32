# Shared by timed-runner.sh and tool-shim.sh (sourced): `run_timed ROW_PREFIX FILE CMD...` runs
# CMD and appends "ROW_PREFIX<TAB>wall<TAB>cpu<TAB>rc" to FILE, where cpu is the user and system
# time of CMD and of every process it waited for (bash's `times`, children's line). Returns
# CMD's status.
run_timed() {
    local prefix=$1 file=$2 t0 t1 rc cu cs
    shift 2
    t0=$(date +%s.%N)
    "$@"
    rc=$?
    t1=$(date +%s.%N)
    # `times` itself, not in a subshell (a forked shell's children times start at zero).
    times >"$file.times.$$"
    read -r cu cs < <(sed -n 2p "$file.times.$$")
    rm -f "$file.times.$$"
    awk -v p="$prefix" -v t0="$t0" -v t1="$t1" -v cu="$cu" -v cs="$cs" -v rc="$rc" '
        function s(x, m) { m = index(x, "m"); return substr(x, 1, m - 1) * 60 + substr(x, m + 1, length(x) - m - 1) }
        BEGIN { printf "%s\t%.2f\t%.2f\t%d\n", p, t1 - t0, s(cu) + s(cs), rc }' >>"$file"
    return $rc
}
