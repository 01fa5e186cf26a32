#!/usr/bin/env bash
# Planted faults: each patch in tests/faults/ breaks the design, a model or a protocol rule the
# way its header says, and names the tests that must catch it:
#
#   Fault: the scoreboard does not clear the rank's bit in the other set
#   Tests: test(=seed_sweep) | test(=loss_duplication_reordering_n_1_to_32)
#
# For each patch (or those named), this applies it to the working tree, runs the named tests
# with cargo-nextest, reverts it, and says for each test whether it failed (caught) and where:
# the first line of its panic message, which names the seed, the trace or the frame, so that a
# seeded test can be sized by the largest position any of its faults needs (docs/performance.md,
# "Test suite"). A fault that a named test lets pass, or a patch that does not build, fails the
# script. The working tree must have no changes in the files a patch touches.
#
#   scripts/faults.sh [NAME...]      (NAME: a patch's file name without .patch)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=tests/faults
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    for p in "$dir"/*.patch; do names+=("$(basename "$p" .patch)"); done
fi
out=target/faults
mkdir -p "$out"
report=$out/report.md
echo "| fault | test | caught | where |" >"$report"
echo "|---|---|---|---|" >>"$report"
missed=0
for name in "${names[@]}"; do
    patch=$dir/$name.patch
    [ -f "$patch" ] || { echo "no $patch" >&2; exit 2; }
    fault=$(sed -n 's/^Fault: //p' "$patch" | head -n 1)
    tests=$(sed -n 's/^Tests: //p' "$patch" | head -n 1)
    [ -n "$fault" ] && [ -n "$tests" ] || { echo "$patch: no Fault: or Tests: line" >&2; exit 2; }
    git apply --check "$patch" || { echo "$patch does not apply" >&2; exit 2; }
    git apply "$patch"
    echo "== $name: $fault"
    cargo nextest run --workspace --no-fail-fast --profile default -E "$tests" >"$out/$name.log" 2>&1
    rc=$?
    git apply -R "$patch"
    if [ $rc -ne 0 ] && [ $rc -ne 100 ]; then
        echo "$name: the patched tree did not build or run (cargo-nextest exit $rc): $out/$name.log" >&2
        tail -n 20 "$out/$name.log" >&2
        missed=$((missed + 1))
        continue
    fi
    cp target/nextest/default/junit.xml "$out/$name.xml"
    # One row per test run: caught (it failed) or MISSED (it passed), and where its panic says.
    python3 - "$out/$name.xml" "$name" >>"$report" <<'PY' || missed=$((missed + 1))
import sys
import xml.etree.ElementTree as ET
path, name = sys.argv[1], sys.argv[2]
rows, missed = [], 0
for case in ET.parse(path).iter("testcase"):
    test = case.get("name")
    failure = case.find("failure")
    if failure is None:
        rows.append(f"| {name} | {test} | MISSED | |")
        missed += 1
        continue
    text = (failure.text or "") + "\n" + "".join(e.text or "" for e in case.iter("system-err"))
    lines = text.splitlines()
    where = next((lines[i + 1] for i, l in enumerate(lines[:-1]) if "panicked at" in l), failure.get("message", ""))
    rows.append(f"| {name} | {test} | caught | {where.strip().replace('|', '/')[:160]} |")
print("\n".join(rows))
sys.exit(1 if missed or not rows else 0)
PY
done
cat "$report"
[ $missed -eq 0 ] || { echo "== $missed fault(s) not caught by every test named" >&2; exit 1; }
echo "== every fault caught by every test named"
