#!/usr/bin/env bash
# cargo's target runner for scripts/test-times.sh: runs one test process (cargo-nextest starts
# one per test: BINARY --exact NAME ...) and appends a row to $SPOTAGG_TIMES_DIR/tests.tsv:
# binary, test, wall s, CPU s (user+sys of the test and of every process it waited for), exit
# status. The tool shims in $SPOTAGG_TIMES_DIR/shims log the tools' own share under the same key.
set -u
. "$(dirname "$0")/times-common.sh"
bin=$1
shift
case " $* " in
*" --list "*) exec "$bin" "$@" ;;
esac
name=""
prev=""
for a in "$@"; do
    [ "$prev" = --exact ] && name=$a
    prev=$a
done
export SPOTAGG_TIMES_KEY="$(basename "$bin" | sed 's/-[0-9a-f]\{16\}$//')"$'\t'"$name"
run_timed "$SPOTAGG_TIMES_KEY" "$SPOTAGG_TIMES_DIR/tests.tsv" "$bin" "$@"
