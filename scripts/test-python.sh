#!/usr/bin/env bash
# The Python package's tests: sets up .venv-torch (scripts/python-env.sh: torch, maturin,
# scikit-learn, matplotlib, pytest, spotagg built from ./python) and runs pytest on
# python/tests. Extra arguments go to pytest (e.g. -k hook). Exit status is pytest's; "no test
# collected" (pytest's 5) is a failure too.
set -euo pipefail
cd "$(dirname "$0")/.."
py=$(scripts/python-env.sh | tail -n 1)
echo "== pytest python/tests"
"$py" -m pytest -p no:cacheprovider -ra python/tests "$@"
