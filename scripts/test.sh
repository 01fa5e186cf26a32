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
# A test whose tool is missing fails with `NOT RUN: ...`; SPOTAGG_SKIP_<TOOL>=1 skips it on
# purpose. Nothing cached outside the clone is used: the Verilator models are built into
# target/spotagg-verilator and the YoWASP tools' caches live in .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
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

stage "style: cargo fmt --check"
cargo fmt --all --check
stage "style: cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

stage "fast tier: cargo test --workspace"
cargo test --workspace --locked "$@"

stage "host crates without rust-hdl: cargo test -p spotagg-sim --no-default-features"
cargo test --locked -p spotagg-sim --no-default-features --lib --test udp_switch_ports --test failover "$@"

stage "python tier: scripts/test-python.sh (torch, maturin, the spotagg package, pytest)"
scripts/test-python.sh

stage "slow tier: full-size synthesis (hdl verilog, board_synth)"
cargo test --locked -p spotagg-hdl --test verilog "$@" -- --ignored --nocapture
cargo test --locked -p spotagg-boards --test board_synth "$@" -- --ignored --nocapture
stage "slow tier: place and route (tests/build.rs: a small core, and the board as it ships)"
cargo test --locked -p spotagg --test build "$@" -- --ignored --nocapture --skip builds_the_i9

stage "all tiers passed"
