#!/usr/bin/env bash
# Runs every spotagg test, after installing the tools the tests need on a fresh Debian machine:
# Yosys (synth_ecp5 checks of every HDL block), Verilator (the generated Verilog against the
# rust-hdl model and the reference switch), iproute2 and ping (the TAP test) from Debian's
# packages; the YoWASP FPGA tools are installed from PyPI into .venv by the build test itself. Python 3 (the independent
# trace tool) and a Rust toolchain are expected on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v yosys >/dev/null 2>&1 || missing+=(yosys)
command -v verilator >/dev/null 2>&1 || missing+=(verilator)
# The TAP test (tests/tap_netns.rs) makes its own network namespace and pings the simulated core.
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v ping >/dev/null 2>&1 || missing+=(iputils-ping)
# spotagg flash's no-cable test runs the real openFPGALoader.
command -v openFPGALoader >/dev/null 2>&1 || missing+=(openfpgaloader)
if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing ${missing[*]} (apt-get)"
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v python3 >/dev/null 2>&1 || { echo "python3 is needed by tests/traces/make_traces.py" >&2; exit 1; }

echo "== cargo test --workspace"
cargo test --workspace --locked "$@"

# The slow Yosys runs that plain `cargo test` leaves out (#[ignore]): the core at widths 1 and 8,
# and its utilization on the LFE5U-25F with the largest slot count fitting half the block RAM.
echo "== slow synthesis checks (cargo test -p spotagg-hdl --test verilog -- --ignored)"
cargo test --locked -p spotagg-hdl --test verilog "$@" -- --ignored --nocapture
