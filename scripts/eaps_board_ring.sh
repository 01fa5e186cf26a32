#!/usr/bin/env bash
# The simulated board as a node of a real EAPS ring in network namespaces: the board's own
# EAPS logic (the switch fabric with its MACs in Verilator, `spotagg tap --board-model` with
# both ports on TAP devices) between Linux bridge nodes run by `spotagg eaps`.
#
#   scripts/eaps_board_ring.sh                 (as root; SPOTAGG_BIN, default target/debug/spotagg)
#
# Ring (domain ring1, control VLAN 10, protected VLAN 100): n1 - B - n3 - n4 - n1, n1 the
# master (primary towards B), n3 and n4 Linux transits, B the board, a transit. B's namespace
# holds its two TAP devices t0 (port 0, towards n1) and t1 (port 1, towards n3), each bridged
# to its veth (w0: t0 + pb1, w1: t1 + pb3, plain two-port bridges: wires); the board reads its
# link state from the veths' carrier, as it reads its PHYs' over MDIO. Hosts h1 on n1, h3 on
# n3 (10.78.0.N), untagged: this kernel has no bridge VLAN filtering, so the Linux nodes block
# whole ports and the board's VLAN gates (tagged protected VLANs only) pass this traffic; the
# loop guard is the master's secondary, as in scripts/eaps_ring.sh.
#
# Events, while h1 pings h3 every 20 ms (400-byte pings, 442-byte frames: data frames tell from
# PDUs, 110 bytes, by size; the model runs about 230 k clocks/s, a fifth of a Gigabit port):
# each ring link taken down for 1 s with `ip link` and brought back, from a Linux end and from
# the board's own end (the board's port loses carrier: it sends LINK-DOWN itself), and the
# board's process killed (the master's fail timer heals the ring round it) and restarted.
# Per event: pings lost, time until they flow again, frames looped (per link direction, data
# frames against the frames the hosts offered in the window). tshark decodes the PDUs on the
# board's links: the master's through the board, and the board's own LINK-DOWN.
#
# The Linux daemons run their protocol loop under SCHED_FIFO (`--rt-priority`,
# EAPS_RT_PRIORITY, default 10), as in scripts/eaps_ring.sh, so that other load on the machine
# does not stall their HEALTH.
#
# Prints one line per event: `event <name> lost <n> flow_again_ms <t> looped <n> offered <n>`,
# the board's EAPS lines, and a table (scripts/eaps_events.py).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/capture.sh"
BIN=${SPOTAGG_BIN:-$ROOT/target/debug/spotagg}
die() { echo "eaps_board_ring: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "needs root (network namespaces, veth, bridges, TAP devices)"
[ -x "$BIN" ] || die "no spotagg binary at $BIN: cargo build (or set SPOTAGG_BIN)"
P=eb$$
WORK=$(mktemp -d /tmp/eaps-board-ring.XXXXXX)
declare -A DPID
PIDS=()
BOARD=
cleanup() {
    for p in "${DPID[@]}" "${PIDS[@]}" $BOARD; do kill "$p" 2>/dev/null || true; done
    sleep 0.3
    for ns in $(ip netns list | awk '{print $1}' | grep "^$P-" || true); do ip netns del "$ns"; done
    [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
HELLO=${EAPS_HELLO_MS:-20}
FAIL=${EAPS_FAIL_MS:-300}
PREFWD=${EAPS_PREFWD_MS:-150}
ns() { echo "$P-$1"; }
nx() { local n=$1; shift; ip netns exec "$(ns "$n")" "$@"; }

for n in n1 n3 n4 nb h1 h3; do
    ip netns add "$(ns $n)"
    nx $n sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
for n in n1 n3 n4; do
    ip -n "$(ns $n)" link add br0 type bridge stp_state 0
    ip -n "$(ns $n)" link set br0 up
done
# Linux-Linux links (n3-n4, n4-n1) and Linux-board links (n1-B, B-n3).
veth() { ip link add "$2" netns "$(ns "$1")" type veth peer name "$4" netns "$(ns "$3")"; }
veth n3 p34 n4 p43
veth n4 p41 n1 p14
veth n1 p1b nb pb1
veth n3 p3b nb pb3
for x in n1:p1b n1:p14 n3:p3b n3:p34 n4:p43 n4:p41; do
    ip -n "$(ns ${x%:*})" link set "${x#*:}" master br0 up
done
for i in 0 1; do
    peer=pb1
    [ $i = 1 ] && peer=pb3
    ip -n "$(ns nb)" tuntap add dev t$i mode tap
    ip -n "$(ns nb)" link add w$i type bridge stp_state 0
    ip -n "$(ns nb)" link set t$i master w$i up
    ip -n "$(ns nb)" link set $peer master w$i up
    ip -n "$(ns nb)" link set w$i up
done
for h in 1:n1 3:n3; do
    id=${h%:*} n=${h#*:}
    ip link add eth0 netns "$(ns h$id)" address "02:78:00:00:00:0$id" type veth peer name h$id netns "$(ns $n)"
    ip -n "$(ns h$id)" addr add 10.78.0.$id/24 dev eth0
    ip -n "$(ns h$id)" link set eth0 up
    ip -n "$(ns $n)" link set h$id master br0 up
done
ip -n "$(ns h1)" neigh add 10.78.0.3 lladdr 02:78:00:00:00:03 dev eth0 nud permanent
ip -n "$(ns h3)" neigh add 10.78.0.1 lladdr 02:78:00:00:00:01 dev eth0 nud permanent
sleep 0.3
for x in n1:p1b n1:p14 n3:p3b n3:p34 n4:p43 n4:p41; do nx ${x%:*} bridge link set dev "${x#*:}" state 0; done

domain() { # role primary secondary
    printf '\n[[domain]]\nname = "ring1"\nrole = "%s"\nprimary = "%s"\nsecondary = "%s"\ncontrol_vlan = 10\nprotected_vlans = [100]\nhello_ms = %s\nfail_ms = %s\npre_forwarding_ms = %s\n' \
        "$1" "$2" "$3" "$HELLO" "$FAIL" "$PREFWD"
}
{ echo 'bridge = "br0"'; domain master p1b p14; } >"$WORK/n1.toml"
{ echo 'bridge = "br0"'; domain transit p3b p34; } >"$WORK/n3.toml"
{ echo 'bridge = "br0"'; domain transit p41 p43; } >"$WORK/n4.toml"
{ echo 'bridge = "board"'; domain transit 0 1; } >"$WORK/nb.toml"
{
    echo 'switch_mac = "02:78:00:00:00:64"'
    echo 'switch_ip = "10.78.0.100"'
    echo 'payload_bytes = 256'
    echo 'slots = 4'
    for id in 1 3; do printf '\n[[worker]]\nip = "10.78.0.%d"\nmac = "02:78:00:00:00:%02x"\n' $id $id; done
} >"$WORK/job.toml"

start_daemon() {
    ip netns exec "$(ns $1)" "$BIN" eaps --rt-priority "${EAPS_RT_PRIORITY:-10}" --config "$WORK/$1.toml" >>"$WORK/$1.log" 2>&1 &
    DPID[$1]=$!
}
start_board() {
    local attached
    attached=$(grep -c "spotagg tap: attached" "$WORK/board.log" 2>/dev/null || true)
    attached=${attached:-0}
    # (ip netns exec itself, not a function in the background: $! is then the model's process.)
    # (At nice -10: the model is the board's hardware and must keep up with the wall clock
    # whatever else the machine runs.)
    ip netns exec "$(ns nb)" nice -n -10 "$BIN" tap --board-model --config "$WORK/job.toml" --tap t0 --tap1 t1 --eaps "$WORK/nb.toml" \
        --carrier0 pb1 --carrier1 pb3 >>"$WORK/board.log" 2>&1 &
    BOARD=$!
    # The first start compiles the model with Verilator (a minute or two on an idle 2-core
    # machine, several when it is loaded; on a fresh clone nothing is cached), a restart loads it.
    # It has attached (and handles SIGTERM) once the log has one more "attached" line than
    # before: a restart appends to the first start's log.
    for _ in $(seq 1 6000); do
        [ "$(grep -c "spotagg tap: attached" "$WORK/board.log")" -gt "$attached" ] && return 0
        kill -0 $BOARD 2>/dev/null || die "the board model exited: $(tail -5 "$WORK/board.log")"
        sleep 0.1
    done
    die "the board model did not attach in 600 s"
}
stop_board() {
    kill -TERM $BOARD
    local rc=0
    wait $BOARD || rc=$?
    [ $rc = 0 ] || die "the board model exited with status $rc (128 + a signal's number: killed by it) on SIGTERM: $(tail -8 "$WORK/board.log")"
    BOARD=
}
kill_board() {
    kill -KILL $BOARD
    wait $BOARD 2>/dev/null || true
    BOARD=
}
state() { # node
    "$BIN" eaps status --config "$WORK/$1.toml" 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['domains'][0]['state'])" 2>/dev/null || echo none
}
wait_complete() { # 60 s at most: a loaded machine starts the daemons slowly
    for _ in $(seq 1 1200); do
        [ "$(state n1)" = Complete ] && return 0
        sleep 0.05
    done
    die "the ring did not reach Complete: n1 $(state n1); board: $(tail -3 "$WORK/board.log")"
}
on_stuck() { # what capture.sh's `flowing` prints when the pings stop: states, FDBs, the board
    local n
    for n in n1 n3 n4; do
        echo "stuck: $n $("$BIN" eaps status --config "$WORK/$n.toml" 2>/dev/null | python3 -c "
import json, sys
s = json.load(sys.stdin)
print(' '.join(d['state'] for d in s['domains']), ' '.join(f\"{p['name']}:{p['link']}:{'fwd' if p['forwarding'] else 'blk'}\" for p in s['ports']))" 2>&1)"
        echo "stuck: $n fdb: $(nx $n bridge fdb show br br0 2>/dev/null | grep -v permanent | grep "02:78" | tr '\n' ';')"
        echo "stuck: $n links: $(ip -n "$(ns $n)" -br link show | tr '\n' ';')"
    done
    echo "stuck: board: $(tail -5 "$WORK/board.log" | tr '\n' ';')"
    for n in n1 n3 n4; do echo "stuck: $n log: $(tail -4 "$WORK/$n.log" | tr '\n' ';')"; done
}
counters() { # -> "ns ifc tx_packets tx_bytes" for every ring link end and host eth0
    python3 - "$P" <<'PY'
import json, subprocess, sys
p = sys.argv[1]
for n, ifcs in [("n1", ["p1b", "p14"]), ("n3", ["p3b", "p34"]), ("n4", ["p43", "p41"]), ("nb", ["pb1", "pb3"]), ("h1", ["eth0"]), ("h3", ["eth0"])]:
    for l in json.loads(subprocess.check_output(["ip", "-n", f"{p}-{n}", "-s", "-j", "link", "show"])):
        if l["ifname"] in ifcs:
            s = l["stats64"]["tx"]; print(n, l["ifname"], s["packets"], s["bytes"])
PY
}

start_board
for n in n1 n3 n4; do start_daemon $n; done
wait_complete
echo "eaps_board_ring: ring Complete (hello $HELLO ms, fail $FAIL ms, pre-forwarding $PREFWD ms)" >&2

capture "$(ns n1)" p1b 3 "$WORK/p1b.pcapng"
TSHARK_PID=$CAPTURE_PID
# The board's own LINK-DOWN (when its port 0 loses carrier, the third event) leaves by its
# port 1, towards n3: captured there over the first events.
capture "$(ns n3)" p3b 15 "$WORK/p3b.pcapng"
TSHARK3_PID=$CAPTURE_PID

EVENTS=$WORK/events
: >"$EVENTS"
# One broadcast ping from h1: crosses each link direction at most once without a loop.
SIZE=400
bcast() { nx h1 ping -b -c 1 -s $SIZE -W 0.05 10.78.0.255 >/dev/null 2>&1 || true; }
down() { ip -n "$(ns $1)" link set "$2" down; }
up() { ip -n "$(ns $1)" link set "$2" up; }

# (The pings' deadline is only a bound: they are stopped after the last event.)
DUR=900
PING_LOGS=$WORK/ping
# (ip netns exec itself, not nx in the background: $! is then ping's process, which the end stops.)
ip netns exec "$(ns h1)" stdbuf -oL ping -D -n -i 0.02 -s $SIZE -W 1 -w $DUR 10.78.0.3 >"$WORK/ping" 2>&1 &
PING=$!
PIDS+=($PING)
# h3 pings h1 too (not measured): traffic goes both ways, as on a real ring. A frame that the
# simulated board releases after the master's flush (the model runs at ~230 k clocks/s, so a
# frame it holds leaves tens of milliseconds late, where the board takes microseconds) teaches
# n1 a stale port for h3 that only h3's next frame corrects; with nothing from h3 but replies
# the pings stopped until ageing (a CI run, event down-pb3: n1 kept h3 on p1b, behind the
# board's downed port 1).
ip netns exec "$(ns h3)" ping -n -q -i 0.02 -s $SIZE -W 1 -w $DUR 10.78.0.1 >/dev/null 2>&1 &
PIDS+=($!)
sleep 1
for x in n1:p1b nb:pb1 nb:pb3 n3:p3b n3:p34 n4:p41; do
    event "down-${x#*:}" down ${x%:*} ${x#*:}
    event "up-${x#*:}" up ${x%:*} ${x#*:}
    sleep 0.2
done
# Whether the board carries the pings when it is killed: the data frames n1 sends into its port
# 0 in 0.5 s (frames of $((SIZE + 42)) bytes; the rest of p1b's traffic is 110-byte PDUs). An
# outcome the test checks, where the pings lost at the kill depend on the scheduler (a ping
# process starved through the outage loses nothing).
txstat() { ip netns exec "$(ns n1)" cat /sys/class/net/p1b/statistics/tx_$1; }
p0=$(txstat packets) b0=$(txstat bytes)
sleep 0.5
p1=$(txstat packets) b1=$(txstat bytes)
echo "eaps_board_ring: before the kill n1 sent $(((b1 - b0 - 110 * (p1 - p0)) / (SIZE + 42 - 110))) ping frames into the board in 0.5 s" >&2
event "board-killed" kill_board
event "board-restarted" start_board
sleep 1
kill -INT $PING 2>/dev/null || true
wait $PING 2>/dev/null || true
[ -n "$TSHARK_PID" ] && wait "$TSHARK_PID" 2>/dev/null || true
[ -n "$TSHARK3_PID" ] && wait "$TSHARK3_PID" 2>/dev/null || true
stop_board
echo "eaps_board_ring: the board's log:" >&2
grep "spotagg tap:" "$WORK/board.log" | sed 's/^/  /' >&2

python3 "$ROOT/scripts/eaps_events.py" "$EVENTS" --frame $((SIZE + 42)) --interval-ms 20 "$WORK/ping"

if [ -f "$WORK/p1b.pcapng" ]; then
    echo "tshark on n1's p1b (PDUs both ways, the board's among them):"
    tshark -r "$WORK/p1b.pcapng" -Y edp.eaps -T fields -e eth.src -e vlan.id -e edp.eaps.type -e edp.eaps.vlanid -e edp.eaps.sysmac \
        -e edp.checksum.status 2>/dev/null | sort | uniq -c | sed 's/^/tshark p1b: /'
fi
if [ -f "$WORK/p3b.pcapng" ]; then
    echo "tshark on n3's p3b while the board's port 0 went down (source, VLAN, type, control VLAN, system MAC, checksum):"
    tshark -r "$WORK/p3b.pcapng" -Y edp.eaps -T fields -e eth.src -e vlan.id -e edp.eaps.type -e edp.eaps.vlanid \
        -e edp.eaps.sysmac -e edp.checksum.status 2>/dev/null | sort | uniq -c | sed 's/^/tshark p3b: /'
fi
echo "eaps_board_ring: done"
