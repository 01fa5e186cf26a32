#!/usr/bin/env bash
# A tool shim of scripts/test-times.sh, linked as $SPOTAGG_TIMES_DIR/shims/TOOL: runs the real
# TOOL (the next one on PATH) and appends the running test's key, TOOL, its wall and CPU seconds
# to tools.tsv. What a shimmed tool starts (verilator's make and g++) counts as its own.
set -u
. "$(dirname "$(readlink -f "$0")")/times-common.sh"
tool=$(basename "$0")
shims=$(dirname "$0")
PATH=$(echo "$PATH" | tr ':' '\n' | grep -vxF "$shims" | paste -sd:)
export PATH
if [ -n "${SPOTAGG_TIMES_IN_TOOL:-}" ] || [ -z "${SPOTAGG_TIMES_KEY:-}" ]; then
    exec "$tool" "$@"
fi
export SPOTAGG_TIMES_IN_TOOL=$tool
run_timed "$SPOTAGG_TIMES_KEY"$'\t'"$tool" "$SPOTAGG_TIMES_DIR/tools.tsv" "$tool" "$@"
