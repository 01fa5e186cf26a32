#!/usr/bin/env bash
# The emulated-cluster benchmark: spotagg's software switch against Gloo (torch.distributed)
# on the same shaped links.
#
#   scripts/cluster_bench.sh N RATE_MBIT [ELEMENTS] [RUNS]      (as root)
#
# Builds N worker network namespaces, each with one veth link (shaped with tbf to RATE_MBIT in
# both directions) to a bridging namespace whose bridge holds the switch's address 10.77.0.1;
# workers are 10.77.0.10 + rank. It then runs, RUNS times each:
#   1. `spotagg switch` in the bridging namespace (the reference engine, batched UDP,
#      SPOTAGG_SWITCH_THREADS threads, default 1) and `spotagg worker` in every worker namespace,
#      started together (--start-at), rank 0 verifying its result against the exact sum;
#   2. the same in 16-bit lanes (`spotagg worker --lanes 16`, docs/switch.md §9: half the
#      packets), rank 0 verifying against the 16-bit bound;
#   3. a Gloo all-reduce of a float32 tensor of the same length (scripts/cluster_gloo.py) over
#      TCP between the worker namespaces, through the same bridge and links;
#   4. the same in float16 as DDP's fp16_compress_hook sends it (cast, all-reduce, cast back).
# It prints each system's median (the slowest rank of each run), the ratios, the in-network bound
# (every worker sends and receives its tensor once: packets × 1076 B of frame / rate) and the
# ring all-reduce bound (2(n−1)/n of the tensor each way, 1514 B frames per 1448 B of TCP
# payload), the workers' retransmissions and the qdisc drops, and removes everything it made.
#
# With SPOTAGG_BENCH=ddp it runs DDP training steps instead (scripts/cluster_ddp.py: a 6.8 M
# parameter MLP, batch 8 a rank, RUNS timed steps after 3 untimed) with each of Gloo, Gloo +
# fp16_compress_hook, PowerSGD rank 2 and 8, spotagg and spotagg in 16-bit lanes (or the modes
# in SPOTAGG_DDP_MODES), and prints each mode's median step (ELEMENTS is not used).
#
# Environment: SPOTAGG_BIN (default target/release/spotagg), SPOTAGG_PYTHON (default
# .venv-torch/bin/python in the clone: a Python with torch), SPOTAGG_SWITCH_THREADS, SPOTAGG_SLOTS
# (default 128), SPOTAGG_TIMEOUT_MS (default 20).
set -euo pipefail

N=${1:?usage: cluster_bench.sh N RATE_MBIT [ELEMENTS] [RUNS]}
RATE=${2:?usage: cluster_bench.sh N RATE_MBIT [ELEMENTS] [RUNS]}
ELEMENTS=${3:-2500000}
RUNS=${4:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${SPOTAGG_BIN:-$ROOT/target/release/spotagg}
PY=${SPOTAGG_PYTHON:-$ROOT/.venv-torch/bin/python}
THREADS=${SPOTAGG_SWITCH_THREADS:-1}
SLOTS=${SPOTAGG_SLOTS:-128}
TIMEOUT_MS=${SPOTAGG_TIMEOUT_MS:-20}

die() { echo "cluster_bench: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "needs root (network namespaces, veth, tc); run it with sudo"
[[ "$N" =~ ^[0-9]+$ ]] && [ "$N" -ge 2 ] && [ "$N" -le 32 ] || die "N = $N: must be 2..=32"
[[ "$RATE" =~ ^[0-9]+$ ]] && [ "$RATE" -ge 1 ] || die "RATE_MBIT = $RATE: must be a whole number of Mb/s"
[ -x "$BIN" ] || die "no spotagg binary at $BIN: cargo build --release (or set SPOTAGG_BIN)"
[ -x "$PY" ] || die "no Python at $PY: make the torch venv (scripts/python-env.sh) or set SPOTAGG_PYTHON"
"$PY" -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null ||
    die "$PY has no torch with Gloo: pip install torch"
for t in ip tc timeout; do command -v $t >/dev/null || die "NOT RUN: $t missing (apt-get install iproute2 coreutils)"; done

P=sa$$
SW=${P}s
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for i in $(seq 0 $((N - 1))); do ip netns del ${P}w$i 2>/dev/null || true; done
    ip netns del $SW 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# tbf: burst at least a TSO segment and rate/HZ; a deep queue (no drops from the queue length).
BURST=$((RATE / 8 > 64 ? RATE / 8 : 64))kb
LIMIT=4mb
ip netns add $SW
ip -n $SW link set lo up
ip -n $SW link add br0 type bridge
ip -n $SW link set br0 up
ip -n $SW addr add 10.77.0.1/24 dev br0
for i in $(seq 0 $((N - 1))); do
    ns=${P}w$i
    ip netns add $ns
    ip -n $ns link set lo up
    ip link add ${P}a$i type veth peer name ${P}b$i
    ip link set ${P}a$i netns $ns
    ip -n $ns link set ${P}a$i name eth0
    ip link set ${P}b$i netns $SW
    ip -n $SW link set ${P}b$i master br0
    ip -n $SW link set ${P}b$i up
    ip -n $ns addr add 10.77.0.$((10 + i))/24 dev eth0
    ip -n $ns link set eth0 up
    ip netns exec $ns tc qdisc add dev eth0 root tbf rate ${RATE}mbit burst $BURST limit $LIMIT
    ip netns exec $SW tc qdisc add dev ${P}b$i root tbf rate ${RATE}mbit burst $BURST limit $LIMIT
done

JOB=$WORK/job.toml
{
    echo 'switch_mac = "02:00:5a:00:00:01"'
    echo 'switch_ip = "10.77.0.1"'
    echo 'payload_bytes = 1024'
    echo "slots = $SLOTS"
    echo "timeout_ms = $TIMEOUT_MS"
    echo "switch_ports = $THREADS"
    echo 'lanes16 = true'
    for i in $(seq 0 $((N - 1))); do
        printf '\n[[worker]]\nip = "10.77.0.%d"\nmac = "02:00:5a:00:01:%02x"\n' $((10 + i)) $i
    done
} >"$JOB"

# UDP receive-buffer drops (RcvbufErrors) over every namespace, cumulative.
rcvbuf() {
    local d=0 x ns
    for ns in $SW $(for i in $(seq 0 $((N - 1))); do echo ${P}w$i; done); do
        x=$(ip netns exec $ns awk '/^Udp:/ { if (h) { print $6; exit } h = 1 }' /proc/net/snmp)
        d=$((d + x))
    done
    echo $d
}

drops() {
    local d=0 x
    for i in $(seq 0 $((N - 1))); do
        x=$(ip netns exec ${P}w$i tc -s qdisc show dev eth0 | sed -n 's/.*dropped \([0-9]*\).*/\1/p' | head -1)
        d=$((d + x))
        x=$(ip netns exec $SW tc -s qdisc show dev ${P}b$i | sed -n 's/.*dropped \([0-9]*\).*/\1/p' | head -1)
        d=$((d + x))
    done
    echo $d
}

if [ "${SPOTAGG_BENCH:-allreduce}" = ddp ]; then
    MODES=${SPOTAGG_DDP_MODES:-gloo gloo-fp16 powersgd2 powersgd8 spotagg spotagg16}
    # 6.8 M parameters a step, both ways, at the link rate: generous.
    LIMIT_S=$((120 + 27 * 8 * 3 * (RUNS + 3) / RATE))
    ip netns exec $SW "$BIN" switch --config "$JOB" --bind 10.77.0.1:48864 --exit-after-idle $((LIMIT_S + 30)) \
        >"$WORK/switch-ddp.out" 2>&1 &
    PIDS+=($!)
    sleep 0.3
    for mode in $MODES; do
        dpids=()
        for i in $(seq 0 $((N - 1))); do
            GLOO_SOCKET_IFNAME=eth0 timeout $LIMIT_S ip netns exec ${P}w$i "$PY" "$ROOT/scripts/cluster_ddp.py" \
                --rank $i --world "$N" --master 10.77.0.10 --mode $mode --steps "$RUNS" \
                --switch 10.77.0.1:48864 --job "$JOB" >"$WORK/d-$mode-$i.json" 2>"$WORK/d-$mode-$i.err" &
            dpids+=($!)
            PIDS+=($!)
        done
        for p in "${dpids[@]}"; do
            wait "$p" || { rc=$?; cat "$WORK"/d-$mode-*.err "$WORK"/d-$mode-*.json >&2; die "a DDP rank failed ($mode, exit status $rc)"; }
        done
        echo "ddp $mode: $(cat "$WORK/d-$mode-0.json")" >&2
    done
    "$PY" - "$N" "$RATE" "$RUNS" "$WORK" $MODES <<'EOF'
import json, statistics, sys
n, rate, runs, work, modes = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5:]
names = {"gloo": "Gloo, float32", "gloo-fp16": "Gloo + fp16_compress_hook", "powersgd2": "Gloo + PowerSGD rank 2",
         "powersgd8": "Gloo + PowerSGD rank 8", "spotagg": "spotagg, 32-bit lanes", "spotagg16": "spotagg, 16-bit lanes"}
res = {m: json.loads(open(f"{work}/d-{m}-0.json").read().splitlines()[-1]) for m in modes}
ref = statistics.median(res["spotagg16"]["seconds"]) if "spotagg16" in res else None
first = next(iter(res.values()))
print(f"{rate} Mb/s links, n = {n}; DDP step of a {first['params'] / 1e6:.1f} M-parameter MLP, batch 8 a rank; "
      f"median of {runs} steps (the slowest rank's)")
print("| gradients through | median step (steps) | step / spotagg 16-bit step |")
print("|---|---|---|")
for m, r in res.items():
    med = statistics.median(r["seconds"])
    extra = " (fell back to Gloo)" if r.get("fell_back") else ""
    rel = f"{med / ref:.2f}" if ref else ""
    print(f"| {names[m]}{extra} | {med:.3f} s ({', '.join(f'{x:.3f}' for x in r['seconds'])}) | {rel} |")
EOF
    exit 0
fi

# A bound on each process: generous for the slowest link.
LIMIT_S=$((60 + ELEMENTS * 4 * 8 * 4 / (RATE * 1000000)))
MARGIN=$(awk -v e="$ELEMENTS" 'BEGIN { printf "%.1f", 1.5 + e / 4e6 }')
IDLE=$(awk -v m="$MARGIN" 'BEGIN { printf "%.1f", m + 3 }')

declare -A SPOT_T
RETX=0
SPUR=0
for lanes in 32 16; do
SPOT=()
for run in $(seq 1 "$RUNS"); do
    timeout $LIMIT_S ip netns exec $SW "$BIN" switch --config "$JOB" --bind 10.77.0.1:48864 \
        --exit-after-idle "$IDLE" --json >"$WORK/switch-$run.json" 2>"$WORK/switch-$run.err" &
    PIDS+=($!)
    sleep 0.3
    at=$(python3 -c "import time; print(f'{time.time() + $MARGIN:.3f}')")
    wpids=()
    for i in $(seq 0 $((N - 1))); do
        v=""
        [ "$i" = 0 ] && v=--verify
        timeout $LIMIT_S ip netns exec ${P}w$i "$BIN" worker --config "$JOB" --rank $i --switch 10.77.0.1:48864 \
            --elements "$ELEMENTS" --lanes $lanes --start-at "$at" $v >"$WORK/w$run-$i.json" 2>"$WORK/w$run-$i.err" &
        wpids+=($!)
        PIDS+=($!)
    done
    for p in "${wpids[@]}"; do
        wait "$p" || { cat "$WORK"/w$run-*.err "$WORK"/switch-$run.* >&2; die "a spotagg worker failed (run $run)"; }
    done
    t=$(cat "$WORK"/w$run-*.json | "$PY" -c 'import json,sys; print(max(json.loads(l)["seconds"] for l in sys.stdin))')
    r=$(cat "$WORK"/w$run-*.json | "$PY" -c 'import json,sys; print(sum(json.loads(l)["retransmissions"] for l in sys.stdin))')
    sp=$(cat "$WORK"/w$run-*.json | "$PY" -c 'import json,sys; print(sum(json.loads(l)["spurious_retransmissions"] for l in sys.stdin))')
    SPUR=$((SPUR + sp))
    SPOT+=("$t")
    RETX=$((RETX + r))
    wait 2>/dev/null || true
    rtt=$(cat "$WORK"/w$run-*.json | "$PY" -c 'import json,sys; w=[json.loads(l) for l in sys.stdin]; print("srtt %.1f-%.1f ms, rto %.1f-%.1f ms" % (min(x["srtt_ms"] for x in w), max(x["srtt_ms"] for x in w), min(x["rto_ms"] for x in w), max(x["rto_ms"] for x in w)))')
    sw=$("$PY" -c 'import json,sys; d=json.loads(open(sys.argv[1]).read().splitlines()[-1]); c=d["counters"]; u=d["udp"]; print("switch: duplicates %d, results retransmitted %d, send dropped %d, datagrams per receive call %.1f, per send call %.1f" % (c["duplicates"], c["results_retransmitted"], u["send_dropped"], u["datagrams_in"] / max(1, u["recv_calls"]), u["datagrams_out"] / max(1, u["send_calls"])))' "$WORK/switch-$run.json" 2>/dev/null || echo "switch: no statistics")
    echo "spotagg $lanes-bit run $run: ${t} s, $r retransmissions ($sp found spurious); $rtt; $sw; UDP receive-buffer drops so far $(rcvbuf), qdisc drops $(drops)" >&2
done
SPOT_T[$lanes]="${SPOT[*]}"
done
SPOT_DROPS=$(drops)

for mode in fp32 fp16; do
    gpids=()
    f=""
    [ "$mode" = fp16 ] && f=--fp16
    for i in $(seq 0 $((N - 1))); do
        GLOO_SOCKET_IFNAME=eth0 timeout $((LIMIT_S * RUNS)) ip netns exec ${P}w$i "$PY" "$ROOT/scripts/cluster_gloo.py" \
            --rank $i --world "$N" --master 10.77.0.10 --elements "$ELEMENTS" --runs "$RUNS" $f \
            >"$WORK/g-$mode-$i.json" 2>"$WORK/g-$mode-$i.err" &
        gpids+=($!)
        PIDS+=($!)
    done
    for p in "${gpids[@]}"; do
        wait "$p" || { cat "$WORK"/g-$mode-*.err >&2; die "a Gloo rank failed ($mode)"; }
    done
    cat "$WORK"/g-$mode-*.json >"$WORK/gloo-$mode.json"
done
ALL_DROPS=$(drops)

"$PY" - "$N" "$RATE" "$ELEMENTS" "$RETX" "$SPOT_DROPS" "$((ALL_DROPS - SPOT_DROPS))" "$SLOTS" "$SPUR" "$WORK" "${SPOT_T[32]}" "${SPOT_T[16]}" <<'EOF'
import json, math, statistics, sys
n, rate, e, retx, sdrops, gdrops, slots, spur = (int(x) for x in sys.argv[1:9])
work = sys.argv[9]
spot = {32: [float(x) for x in sys.argv[10].split()], 16: [float(x) for x in sys.argv[11].split()]}

def gloo(mode):
    runs = [json.loads(l) for l in open(f"{work}/gloo-{mode}.json")]
    return [max(r["seconds"][i] for r in runs) for i in range(len(runs[0]["seconds"]))]

bps = rate * 1e6
def in_net(k):
    packets = math.ceil(e / k) + min(slots, math.ceil(e / k))
    return packets * (1024 + 10 + 8 + 20 + 14) * 8 / bps
ring = 2 * (n - 1) / n * e * 4 * 8 / bps * 1514 / 1448
rows = [
    ("spotagg, 32-bit lanes", spot[32], in_net(256)),
    ("spotagg, 16-bit lanes", spot[16], in_net(512)),
    ("Gloo, float32", gloo("fp32"), ring),
    ("Gloo, float16 (as fp16_compress_hook)", gloo("fp16"), ring / 2),
]
t16 = statistics.median(spot[16])
print(f"{rate} Mb/s links, n = {n}, {e / 1e6:g} M f32; medians of the slowest rank, {len(spot[32])} runs each")
print("| system | median (runs) | its bound | median / bound | system / spotagg 16-bit |")
print("|---|---|---|---|---|")
for name, ts, bound in rows:
    m = statistics.median(ts)
    print(f"| {name} | {m:.3f} s ({', '.join(f'{x:.3f}' for x in ts)}) | {bound:.3f} s | {m / bound:.2f} | {m / t16:.2f} |")
print(f"spotagg retransmissions {retx} ({spur} found spurious); qdisc drops spotagg {sdrops}, Gloo {gdrops}")
EOF
