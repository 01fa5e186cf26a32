#!/usr/bin/env bash
# Creates (or brings up to date) .venv-torch/ in the clone: torch from PyPI (its default wheel,
# a few GB, installs in 2-3 minutes), maturin, numpy, pytest, scikit-learn, matplotlib,
# prometheus_client (its text parser checks spotagg.Stats.prometheus()), jax (CPU), keras and
# tensorflow-cpu (spotagg.jax, spotagg.keras, spotagg.tensorflow; jax 0.12 needs Python 3.12,
# so 0.10 on 3.11; TensorFlow installs in about 25 s), and the spotagg
# package built from ./python by maturin through pip, offline (no build isolation:
# the maturin of the venv builds it; cargo's crates come from crates.io as for every crate of
# the workspace). pip keeps no wheel cache (its cache dir is target/pip-cache) and cargo's
# target dir is target/, both in the clone. Idempotent: a second run checks the installed
# versions and rebuilds spotagg only incrementally. An exclusive lock (flock on
# .venv-torch.lock) keeps two runs from racing.
# SPOTAGG_PY_PROFILE picks the cargo profile of that build: `release` (the default, what a
# user's `pip install ./python` builds) or `dev`, which scripts/test.sh uses: the tests check
# behaviour, not speed, and the dev profile reuses the crates the Rust tests compiled (the
# release build is 90 s of CPU more on a fresh clone, docs/performance.md "Test suite").
# Prints the venv's python path on the last line.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
exec 9>"$root/.venv-torch.lock"
flock 9

export PIP_CACHE_DIR="$root/target/pip-cache"
# No wheel cache: each wheel is installed once into the venv, and torch's cached wheel would
# take another 2.5 GB of disk beside the installed copy.
export PIP_NO_CACHE_DIR=1
export PIP_DISABLE_PIP_VERSION_CHECK=1
export CARGO_TARGET_DIR="$root/target"
venv="$root/.venv-torch"
py="$venv/bin/python"
# maturin's build hook runs the `maturin` command of the venv.
export PATH="$venv/bin:$PATH"
mkdir -p "$PIP_CACHE_DIR"

if [ ! -x "$py" ]; then
    echo "== python-env: creating $venv" >&2
    python3 -m venv "$venv"
fi
want=(torch "maturin>=1.16,<2" numpy pytest scikit-learn matplotlib prometheus_client "jax[cpu]>=0.10" "keras>=3.15,<4"
    "tensorflow-cpu>=2.16")
# Installed, not imported (importing TensorFlow alone takes 7 s of CPU).
if ! "$py" -c 'import importlib.util as u, sys
sys.exit(any(u.find_spec(m) is None for m in ("torch", "maturin", "numpy", "pytest", "sklearn", "matplotlib",
         "prometheus_client", "jax", "keras", "tensorflow")))' >/dev/null 2>&1; then
    echo "== python-env: pip install ${want[*]} (torch is large: a few minutes)" >&2
    # pip compiles every module to bytecode (about 27 s of CPU for torch's 9,500 files): with
    # PYTHONDONTWRITEBYTECODE set, as on this project's machines, a module without its .pyc is
    # compiled again by every process that imports it (torch: 3.5 s of CPU an import, not 1.9).
    "$py" -m pip install -q "${want[@]}" >&2
fi
# spotagg: rebuilt when any of its sources or the workspace crates it wraps are newer than the
# stamp (cargo rebuilds only what changed).
profile=${SPOTAGG_PY_PROFILE:-release}
case $profile in
release | dev) ;;
*)
    echo "SPOTAGG_PY_PROFILE=$profile: must be release or dev" >&2
    exit 2
    ;;
esac
stamp="$venv/.spotagg-stamp"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$profile" ] || ! "$py" -c 'import spotagg' >/dev/null 2>&1 \
    || [ -n "$(find python/src python/python python/Cargo.toml python/pyproject.toml driver/src driver/Cargo.toml \
        spec/src spec/Cargo.toml controller/src controller/build.rs controller/Cargo.toml Cargo.lock -newer "$stamp" \
        -not -path '*/__pycache__*' -print -quit)" ]; then
    echo "== python-env: pip install ./python (maturin, $profile build)" >&2
    MATURIN_PEP517_ARGS="--profile $profile" \
        "$py" -m pip install -q --no-build-isolation --no-deps --force-reinstall ./python >&2
    echo "$profile" >"$stamp"
fi
echo "$py"
