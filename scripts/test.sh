#!/usr/bin/env bash
# Runs every spotagg test, every tier, after installing what the tests need on a fresh Debian
# machine:
# - from Debian's packages: Yosys (synth_ecp5 checks of every HDL block), Verilator (the
#   generated Verilog against the rust-hdl model and the reference switch), iproute2 and ping
#   (the TAP and namespace tests), tshark (PDU decoding checks), openFPGALoader (spotagg flash);
# - from PyPI, inside the clone: the YoWASP FPGA tools into .venv (by the build test itself);
#   torch, maturin, numpy, scikit-learn, matplotlib, pytest and the spotagg package built from
#   ./python into .venv-torch (scripts/python-env.sh).
# Python 3 (the independent trace tool) and a Rust toolchain are expected on the machine.
#
# Tiers, as smoltcp's ci.sh runs them:
#   1. style: cargo fmt --check, cargo clippy -D warnings;
#   2. fast: cargo test --workspace (what plain `cargo test` runs in the inner loop);
#   3. python: the spotagg package, its DDP hook and torch.distributed backend (pytest);
#   4. slow: the #[ignore = "slow tier: ..."] tests: place and route, full-size synthesis.
# The slow tier and the Python environment's install run in the background at nice 19 from
# the moment the test binaries are built (they use the CPU the fast tier leaves idle); their
# logs are printed at the end. `#[ignore = "manual: ..."]` tests (measurements for the docs,
# the i9's place and route) are run by hand only.
# A test whose tool is missing fails with `NOT RUN: ...`; SPOTAGG_SKIP_<TOOL>=1 skips it on
# purpose. Nothing cached outside the clone is used: the Verilator models are built into
# target/spotagg-verilator and the YoWASP tools' caches live in .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
# On CI (a clean clone, built once) cargo's incremental caches are only disk: 3.5 GB of target/.
if [ -n "${CI:-}" ]; then
    export CARGO_INCREMENTAL=0
fi
stage() { echo "== [$((SECONDS - start)) s] $*"; }

missing=()
command -v yosys >/dev/null 2>&1 || missing+=(yosys)
command -v verilator >/dev/null 2>&1 || missing+=(verilator)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v ping >/dev/null 2>&1 || missing+=(iputils-ping)
command -v tshark >/dev/null 2>&1 || missing+=(tshark)
command -v openFPGALoader >/dev/null 2>&1 || missing+=(openfpgaloader)
if [ ${#missing[@]} -gt 0 ]; then
    stage "installing ${missing[*]} (apt-get)"
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v python3 >/dev/null 2>&1 || { echo "python3 is needed by tests/traces/make_traces.py" >&2; exit 1; }
# The VLAN TAP test needs the kernel's 802.1Q devices. A kernel built without them (no
# CONFIG_VLAN_8021Q, and no 8021q module to load) cannot run it: say so and skip that test
# alone; the VLAN path stays covered by the reference, rust-hdl, Verilator and replay tests.
if [ -z "${SPOTAGG_SKIP_VLAN:-}" ] && [ "$(id -u)" = 0 ] && command -v ip >/dev/null 2>&1; then
    modprobe 8021q 2>/dev/null || true
    probe="spotagg-vlan-probe-$$"
    if ip netns add "$probe" 2>/dev/null; then
        if ip netns exec "$probe" ip tuntap add dev svp0 mode tap 2>/dev/null &&
            ! ip netns exec "$probe" ip link add link svp0 name svp0.7 type vlan id 7 2>/dev/null; then
            echo "== this kernel ($(uname -r)) has no 802.1Q VLAN devices: the VLAN TAP test is skipped (SPOTAGG_SKIP_VLAN=1)"
            export SPOTAGG_SKIP_VLAN=1
        fi
        ip netns del "$probe" 2>/dev/null || true
    fi
fi

# Background stages: the slow tier (Yosys and nextpnr, single-threaded tools) and the Python
# environment (mostly pip's download of torch) run beside the fast tier at the lowest CPU
# priority, so that they take the cycles the fast tier leaves (its namespace and TAP tests
# wait on the wall clock) and never the ones its timing-sensitive tests need. Each writes
# target/test-logs/NAME.log, printed when it ends; the script fails if any stage fails, and a
# failure or an interrupt stops the stages still running.
logs=target/test-logs
mkdir -p "$logs"
bg_pids=()
bg_names=()
background() { # NAME COMMAND...: run COMMAND at nice 19 in its own process group
    local name=$1
    shift
    stage "background: $name (log: $logs/$name.log)"
    setsid -w nice -n 19 "$@" >"$logs/$name.log" 2>&1 &
    bg_pids+=($!)
    bg_names+=("$name")
}
stop_background() {
    for pid in "${bg_pids[@]}"; do
        kill -TERM -- "-$pid" 2>/dev/null || true
    done
}
trap stop_background EXIT

stage "style: cargo fmt --check"
cargo fmt --all --check

background python-env scripts/python-env.sh

stage "style: cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

stage "build: cargo test --workspace --no-run"
cargo test --workspace --locked --no-run "$@"

# The slow tier: full-size synthesis (the core at full size and other widths, the i9 tops),
# and place and route (a small core, and the board as it ships; `builds_the_i9` is manual).
# `--workspace` with `--test`, not `-p`: the same features as the build above, so nothing is
# compiled again (a `-p` build unifies features differently and rebuilds the crates).
background synthesis cargo test --workspace --locked --test verilog --test board_synth "$@" -- \
    --ignored --nocapture --skip core_feature_costs --skip eaps_domain_costs
background place-and-route cargo test --workspace --locked --test build "$@" -- --ignored --nocapture --skip builds_the_i9

stage "fast tier: cargo test --workspace"
cargo test --workspace --locked "$@"

stage "host crates without rust-hdl: cargo test -p spotagg-sim --no-default-features"
cargo test --locked -p spotagg-sim --no-default-features --lib --test udp_switch_ports --test failover "$@"

stage "python tier: scripts/test-python.sh (torch, maturin, the spotagg package, pytest)"
scripts/test-python.sh

failed=()
for i in "${!bg_pids[@]}"; do
    name=${bg_names[$i]}
    stage "waiting for the background stage $name"
    if wait "${bg_pids[$i]}"; then
        status=passed
    elif [ "$name" = python-env ]; then
        # Only a head start: the python tier ran scripts/python-env.sh again itself and passed.
        status="failed, then done again by the python tier"
    else
        status=FAILED
        failed+=("$name")
    fi
    echo "---- $logs/$name.log ($status) ----"
    cat "$logs/$name.log"
    echo "---- end of $name ($status) ----"
done
trap - EXIT
if [ ${#failed[@]} -gt 0 ]; then
    stage "FAILED: ${failed[*]}"
    exit 1
fi
stage "all tiers passed"
