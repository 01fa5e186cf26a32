#!/usr/bin/env bash
# A real EAPS ring in network namespaces: Linux bridges, the kernel forwarding, `spotagg eaps`
# deciding.
#
#   scripts/eaps_ring.sh                       (as root; SPOTAGG_BIN, default target/debug/spotagg)
#
# Six node namespaces, each a Linux bridge `br0` run by `spotagg eaps`, and veth links:
#   ring 1 (domain ring1, control VLAN 10, master n1): n1 - n2 - n3 - n4 - n1
#   ring 2 (domain ring2, control VLAN 20, master n5): n3 - n5 - n6 - n4, sharing link n3-n4
# Node i's port towards node j is `pIJ`. Hosts, each in its own namespace: h1 on n1, h2 on n2,
# h5 on n5, h6 on n6 (10.77.0.N), hs on n3 (the aggregation switch, 10.77.0.100). Hosts have
# static neighbours and no IPv6, so the only frames on the ring are pings (1042 B), PDUs
# (110 B) and, in the all-reduce phase, SwitchML datagrams.
#
# Phase 1 (both rings, allow_superloop: no shared port): ping h1->h6 and h2->h5 every 10 ms
# while each ring link but the common one is taken down for 1 s and brought back, and while
# n2's daemon is stopped (SIGTERM: its ports go back to blocked, as they were before it
# started) and restarted. Per event: pings lost, time until the pings flow again, frames looped
# (per link direction, data frames = (tx_bytes - 110 tx_packets) / 932 against the frames the
# hosts offered in the window; any excess is a frame that crossed that link twice).
# Phase 2: the common link n3-n4 down for 0.3 s without shared ports: both masters open, the
# VLAN loops round both rings (a superloop); bounded by bringing the link back (and, if the
# loop still runs 0.3 s later, by cutting n5-n6 for 0.2 s).
# Phase 2b: n3's and n4's daemons restarted with a [shared_port] on the common link (n3 the
# controller, n4 the partner, link ID 34, segment health every hello, timeout 10 hellos), and the
# same failure again: the controller blocks ring 2's segment port p35 while the link is down.
# Phase 3: 4 `spotagg worker --verify` on h1, h2, h5, h6 through `spotagg switch` on hs, once
# without and once across a failure of n1-n2 (on h1's path to the switch) 200 ms into the run: exact, stall.
# Phase 4: tshark decodes the PDUs captured on n1's ring port p12 as EAPS.
#
# Prints one line per event: `event <name> lost <n> flow_again_ms <t> looped <n>` and a table.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/capture.sh"
BIN=${SPOTAGG_BIN:-$ROOT/target/debug/spotagg}
die() { echo "eaps_ring: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "needs root (network namespaces, veth, bridges)"
[ -x "$BIN" ] || die "no spotagg binary at $BIN: cargo build (or set SPOTAGG_BIN)"
P=ea$$
WORK=$(mktemp -d /tmp/eaps-ring.XXXXXX)
declare -A DPID
PIDS=()
cleanup() {
    local rc=$?
    # A failed or killed run (the test's timeout sends SIGTERM) says where it was before its
    # work folder goes: the events so far and each daemon's last lines.
    if [ $rc != 0 ] && [ -d "$WORK" ]; then
        echo "eaps_ring: exit status $rc; events so far: $(awk '{print $1}' "$WORK/events" 2>/dev/null | tr '\n' ' ')" >&2
        for f in "$WORK"/n*.log; do [ -f "$f" ] && echo "eaps_ring: $(basename "$f"): $(tail -4 "$f" | tr '\n' ';')" >&2; done
    fi
    for p in "${DPID[@]}" "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    sleep 0.3
    for ns in $(ip netns list | awk '{print $1}' | grep "^$P-" || true); do ip netns del "$ns"; done
    [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap "exit 143" TERM
NODES="1 2 3 4 5 6"
LINKS="1-2 2-3 3-4 4-1 3-5 5-6 6-4"
HOSTS="1:1 2:2 5:5 6:6 100:3" # host id : node
HELLO=${EAPS_HELLO_MS:-10}
FAIL=${EAPS_FAIL_MS:-300}
PREFWD=${EAPS_PREFWD_MS:-150}
ns() { echo "$P-$1"; }
nx() { local n=$1; shift; ip netns exec "$(ns "$n")" "$@"; }

for n in $NODES; do
    ip netns add "$(ns n$n)"
    nx n$n sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    ip -n "$(ns n$n)" link add br0 type bridge stp_state 0
    ip -n "$(ns n$n)" link set br0 up
done
for l in $LINKS; do
    a=${l%-*} b=${l#*-}
    ip link add p$a$b netns "$(ns n$a)" type veth peer name p$b$a netns "$(ns n$b)"
    for x in "$a$b:$a" "$b$a:$b"; do
        ifc=p${x%:*} n=${x#*:}
        ip -n "$(ns n$n)" link set "$ifc" master br0 up
    done
done
for h in $HOSTS; do
    id=${h%:*} n=${h#*:}
    ip netns add "$(ns h$id)"
    nx h$id sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    ip link add eth0 netns "$(ns h$id)" address "02:77:00:00:00:$(printf %02x "$id")" type veth peer name h$id netns "$(ns n$n)"
    ip -n "$(ns h$id)" addr add 10.77.0.$id/24 dev eth0
    ip -n "$(ns h$id)" link set eth0 up
    ip -n "$(ns h$id)" link set lo up
    ip -n "$(ns n$n)" link set h$id master br0 up
done
for h in $HOSTS; do
    for o in $HOSTS; do
        [ "$h" = "$o" ] && continue
        ip -n "$(ns h${h%:*})" neigh add 10.77.0.${o%:*} lladdr "02:77:00:00:00:$(printf %02x "${o%:*}")" dev eth0 nud permanent
    done
done
sleep 0.3
# Ring ports start blocked: that is what a daemon that stops puts back.
for l in $LINKS; do
    a=${l%-*} b=${l#*-}
    nx n$a bridge link set dev p$a$b state 0
    nx n$b bridge link set dev p$b$a state 0
done

domain() { # name role primary secondary vlan
    printf '\n[[domain]]\nname = "%s"\nrole = "%s"\nprimary = "%s"\nsecondary = "%s"\ncontrol_vlan = %s\nprotected_vlans = [100]\nhello_ms = %s\nfail_ms = %s\npre_forwarding_ms = %s\n' \
        "$1" "$2" "$3" "$4" "$5" "$HELLO" "$FAIL" "$PREFWD"
}
write_configs() { # extra-top-line
    for n in $NODES; do
        {
            echo 'bridge = "br0"'
            echo "$1"
            case $n in
                1) domain ring1 master p12 p14 10 ;;
                2) domain ring1 transit p21 p23 10 ;;
                3) domain ring1 transit p32 p34 10; domain ring2 transit p35 p34 20 ;;
                4) domain ring1 transit p41 p43 10; domain ring2 transit p46 p43 20 ;;
                5) domain ring2 master p56 p53 20 ;;
                6) domain ring2 transit p65 p64 20 ;;
            esac
        } >"$WORK/n$n.toml"
    done
}
start_daemon() {
    ip netns exec "$(ns n$1)" "$BIN" eaps --rt-priority "${EAPS_RT_PRIORITY:-10}" --config "$WORK/n$1.toml" >>"$WORK/n$1.log" 2>&1 &
    DPID[$1]=$!
}
stop_daemon() {
    kill -TERM "${DPID[$1]}"
    # 20 s at most: a daemon that does not stop on SIGTERM is a failure to report, not a hang.
    local _
    for _ in $(seq 1 200); do kill -0 "${DPID[$1]}" 2>/dev/null || break; sleep 0.1; done
    kill -0 "${DPID[$1]}" 2>/dev/null && die "n$1's daemon did not stop within 20 s of SIGTERM: $(tail -3 "$WORK/n$1.log")"
    wait "${DPID[$1]}" || die "n$1's daemon exited with an error: $(tail -3 "$WORK/n$1.log")"
    unset "DPID[$1]"
}
state() { # node domain
    "$BIN" eaps status --config "$WORK/n$1.toml" 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); print([x['state'] for x in d['domains'] if x['name']=='$2'][0])" 2>/dev/null || echo none
}
wait_complete() { # 60 s at most: a loaded machine starts the daemons slowly
    for _ in $(seq 1 1200); do
        [ "$(state 1 ring1)" = Complete ] && [ "$(state 5 ring2)" = Complete ] && return 0
        sleep 0.05
    done
    die "the rings did not reach Complete: n1 $(state 1 ring1), n5 $(state 5 ring2)"
}
counters() { # -> "ns ifc tx_packets tx_bytes" for every ring port and host eth0
    python3 - "$P" $NODES -- $HOSTS <<'PY'
import json, subprocess, sys
p, args = sys.argv[1], sys.argv[2:]
k = args.index("--")
for n in args[:k]:
    for l in json.loads(subprocess.check_output(["ip", "-n", f"{p}-n{n}", "-s", "-j", "link", "show"])):
        if l["ifname"].startswith("p"):
            s = l["stats64"]["tx"]; print(f"n{n}", l["ifname"], s["packets"], s["bytes"])
for h in args[k + 1:]:
    h = h.split(":")[0]
    l = json.loads(subprocess.check_output(["ip", "-n", f"{p}-h{h}", "-s", "-j", "link", "show", "dev", "eth0"]))[0]
    s = l["stats64"]["tx"]; print(f"h{h}", "eth0", s["packets"], s["bytes"])
PY
}

on_stuck() { # what capture.sh's `flowing` prints when the pings stop: states, FDBs, pings
    local n
    for n in $NODES; do
        echo "stuck: n$n $("$BIN" eaps status --config "$WORK/n$n.toml" 2>/dev/null | python3 -c "
import json, sys
s = json.load(sys.stdin)
print(' '.join(d['name'] + ':' + d['state'] for d in s['domains']), ' '.join(f\"{p['name']}:{p['link']}:{'fwd' if p['forwarding'] else 'blk'}\" for p in s['ports']))" 2>&1)"
        echo "stuck: n$n bridge: $(nx n$n bridge link show | awk '{for (i = 1; i < NF; i++) if ($i == "state") print $2, $(i + 1)}' | tr '\n' ';')"
        echo "stuck: n$n fdb: $(nx n$n bridge fdb show br br0 2>/dev/null | grep -v permanent | grep "02:77" | tr '\n' ';')"
        echo "stuck: n$n log: $(tail -6 "$WORK/n$n.log" | tr '\n' ';')"
    done
    echo "stuck: counters now: $(counters | tr '\n' ';')"
    for f in ${FLOW_LOGS:-$PING_LOGS}; do echo "stuck: $(basename "$f"): $(tail -3 "$f" | tr '\n' ';')"; done
}

write_configs "allow_superloop = true"
for n in $NODES; do start_daemon $n; done
wait_complete
echo "eaps_ring: both rings Complete (hello $HELLO ms, fail $FAIL ms, pre-forwarding $PREFWD ms)" >&2

# tshark capture on n1's p12 during phase 1 (a few seconds suffice).
capture "$(ns n1)" p12 3 "$WORK/p12.pcapng"
TSHARK_PID=$CAPTURE_PID

EVENTS=$WORK/events
: >"$EVENTS"
# One broadcast (a 1042-byte ICMP echo to 10.77.0.255, which hosts ignore) from h1: without a
# loop it crosses each link direction at most once; in a loop it circulates until the loop breaks.
bcast() { ip netns exec "$(ns h1)" ping -b -c 1 -s 1000 -W 0.05 10.77.0.255 >/dev/null 2>&1 || true; }
link_down() { ip -n "$(ns n${1%-*})" link set p${1%-*}${1#*-} down; }
link_up() { ip -n "$(ns n${1%-*})" link set p${1%-*}${1#*-} up; }

# (The pings' deadline is only a bound: they are stopped after the last event.)
DUR=900
PING_LOGS="$WORK/ping-1-6 $WORK/ping-2-5"
ip netns exec "$(ns h1)" stdbuf -oL ping -D -n -i 0.01 -s 1000 -W 1 -w $DUR 10.77.0.6 >"$WORK/ping-1-6" 2>&1 &
PING1=$!
ip netns exec "$(ns h2)" stdbuf -oL ping -D -n -i 0.01 -s 1000 -W 1 -w $DUR 10.77.0.5 >"$WORK/ping-2-5" 2>&1 &
PING2=$!
PIDS+=($PING1 $PING2)
sleep 1
for l in 1-2 2-3 4-1 3-5 5-6 6-4; do
    event "down-$l" link_down $l
    event "up-$l" link_up $l
    sleep 0.2
done
# (h2 hangs off n2: its pings stop with n2's daemon; h1's flow round it.)
FLOW_LOGS=$WORK/ping-1-6 event "stop-n2-daemon" stop_daemon 2
event "start-n2-daemon" start_daemon 2
sleep 0.5
# Phase 2: the superloop.
tx_packets() { # node ifc
    ip -n "$(ns n$1)" -s -j link show dev "$2" | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['stats64']['tx']['packets'])"
}
superloop() {
    link_down 3-4
    sleep 0.05
    bcast
    sleep 0.25
    link_up 3-4
    # A storm can starve the PDUs that would end it (veth queues drop HEALTH with the storm's
    # frames, and on a loaded machine the daemons too): while n5's p56 (ring 2) or n1's p12
    # (ring 1) still carries more than 1,000 frames in 0.1 s after the repair, either way, cut n5-n6 and
    # n1-n2 together (a link of each ring, so no loop through either survives: cutting ring 2
    # alone left a loop round ring 1 running for 116 s in a loaded CI run), each time for longer
    # (0.2 s, 0.4 s, ... up to 2 s, at most 10 times), which ends it. (Read from sysfs: a storm
    # slows every process, and a shell's read is the cheapest.)
    sleep 0.3
    # Both directions count: a loop that runs one way round a ring sends nothing back on a link.
    frames() {
        local t r
        read -r t r < <(ip netns exec "$(ns n$1)" sh -c "echo \$(cat /sys/class/net/$2/statistics/tx_packets) \$(cat /sys/class/net/$2/statistics/rx_packets)")
        echo $((t + r))
    }
    local a b c d cut=2 tries=0
    while [ $tries -lt 10 ]; do
        a=$(frames 5 p56)
        c=$(frames 1 p12)
        sleep 0.1
        b=$(frames 5 p56)
        d=$(frames 1 p12)
        [ $((b - a)) -gt 1000 ] || [ $((d - c)) -gt 1000 ] || break
        local secs="$((cut / 10)).$((cut % 10))"
        echo "eaps_ring: the loop outlived the repair ($((b - a)) frames in 0.1 s on p56, $((d - c)) on p12): n5-n6 and n1-n2 cut for $secs s" >&2
        link_down 5-6
        link_down 1-2
        sleep "$secs"
        link_up 5-6
        link_up 1-2
        sleep 0.3
        tries=$((tries + 1))
        cut=$((cut * 2 > 20 ? 20 : cut * 2))
    done
}
event "common-link-no-shared-ports" superloop
sleep 1
# Phase 2b: the same failure with shared ports: n3 the controller, n4 the partner.
stop_daemon 3
stop_daemon 4
write_configs ""
shared_port() { printf '\n[shared_port]\nport = "%s"\nmode = "%s"\nlink_id = 34\nsegment_hello_ms = %s\nsegment_timeout_ms = %s\n' "$1" "$2" "$HELLO" $((10 * HELLO)); }
shared_port p34 controller >>"$WORK/n3.toml"
shared_port p43 partner >>"$WORK/n4.toml"
start_daemon 3
start_daemon 4
wait_complete
capture "$(ns n3)" p35 2 "$WORK/p35.pcapng"
TSHARK2_PID=$CAPTURE_PID
sleep 0.5
event "common-link-shared-ports" superloop
[ -n "${TSHARK2_PID:-}" ] && wait "$TSHARK2_PID" 2>/dev/null || true
sleep 0.5
kill -INT $PING1 $PING2 2>/dev/null || true
wait $PING1 $PING2 2>/dev/null || true
[ -n "$TSHARK_PID" ] && wait "$TSHARK_PID" 2>/dev/null || true

python3 "$ROOT/scripts/eaps_events.py" "$EVENTS" --frame 1042 --interval-ms 10 "$WORK/ping-1-6" "$WORK/ping-2-5"

# Phase 3: all-reduce across a failure.
JOB=$WORK/job.toml
{
    echo 'switch_mac = "02:77:00:00:00:64"'
    echo 'switch_ip = "10.77.0.100"'
    echo 'payload_bytes = 1024'
    echo 'slots = 64'
    echo 'timeout_ms = 5'
    for id in 1 2 5 6; do printf '\n[[worker]]\nip = "10.77.0.%d"\nmac = "02:77:00:00:00:%02x"\n' $id $id; done
} >"$JOB"
ELEMENTS=${EAPS_ELEMENTS:-16000000}
allreduce() { # label fail-link-or-empty
    ip netns exec "$(ns h100)" "$BIN" switch --config "$JOB" --bind 10.77.0.100:48864 --exit-after-idle 3 >"$WORK/sw-$1.out" 2>&1 &
    local sw=$!
    PIDS+=($sw)
    sleep 0.3
    local at; at=$(python3 -c "import time; print(f'{time.time() + 1.0:.3f}')")
    local wp=() r=0
    for id in 1 2 5 6; do
        nx h$id "$BIN" worker --config "$JOB" --rank $r --switch 10.77.0.100:48864 --elements "$ELEMENTS" \
            --start-at "$at" --verify >"$WORK/w-$1-$id.json" 2>"$WORK/w-$1-$id.err" &
        wp+=($!)
        r=$((r + 1))
    done
    if [ -n "$2" ]; then
        python3 -c "import time; time.sleep(max(0, $at + 0.2 - time.time()))"
        link_down "$2"
    fi
    for p in "${wp[@]}"; do wait "$p" || die "a worker failed ($1): $(cat "$WORK"/w-$1-*.err)"; done
    [ -n "$2" ] && link_up "$2"
    kill "$sw" 2>/dev/null || true
    cat "$WORK"/w-$1-*.json | python3 -c "
import json,sys
w=[json.loads(l) for l in sys.stdin if l.strip().startswith('{')]
print('allreduce $1: %d workers, slowest %.3f s, retransmissions %d, exact (within the fixed-point bound, every rank) %s' % (len(w), max(x['seconds'] for x in w), sum(x['retransmissions'] for x in w), all(x['ok'] and x['max_error'] is not None for x in w)))"
}
allreduce base ""
sleep 2
allreduce fail 1-2

# Phase 4: tshark.
if [ -s "$WORK/p12.pcapng" ]; then
    tshark -r "$WORK/p12.pcapng" -Y edp.eaps -T fields -e vlan.id -e edp.eaps.type -e edp.eaps.vlanid -e edp.eaps.sysmac -e edp.checksum.status 2>/dev/null \
        | sort | uniq -c | sed 's/^/tshark p12: /'
else
    echo "tshark: not run (no tshark or no capture)"
fi
if [ -s "$WORK/p35.pcapng" ]; then
    # ESL segment health on n3's segment port p35 (both ends' PDUs: n3 sends, n4's arrive through ring 2).
    tshark -r "$WORK/p35.pcapng" -Y edp.esl -T fields -e vlan.id -e edp.esl.sysmac -e edp.esl.state -e edp.esl.role \
        -e edp.esl.linkid1 -e edp.esl.failed1 -e edp.checksum.status 2>/dev/null | sort | uniq -c | sed 's/^/tshark esl p35: /'
fi
for n in $NODES; do [ -n "${DPID[$n]:-}" ] && stop_daemon $n; done
grep -h "stopped; ports back" "$WORK"/n*.log | head -6
echo "eaps_ring: done"
