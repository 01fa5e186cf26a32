#!/usr/bin/env bash
# Two EAPS domains on one ring of `spotagg eaps` nodes, each blocking its own VLANs through the
# per-VLAN gates (docs/eaps.md §9.1; issue 41).
#
#   scripts/eaps_two_domains.sh                (as root; SPOTAGG_BIN, default target/debug/spotagg)
#
# Ring n1 - n2 - n3 - n4 - n1 (port pIJ on node i towards node j), a Linux bridge br0 a node.
# Domain A (control VLAN 10, protects 100-199): master n1, primary p12, secondary p14.
# Domain B (control VLAN 20, protects 200-299): master n3, primary p34, secondary p32.
# Every node runs both (transit of the other's); hello 10 ms, fail 300 ms, pre-forwarding 150 ms.
# Host h2 on n2 streams tagged frames (scripts/vlan_frames.py, AF_PACKET: no 802.1Q devices
# here) every 2 ms: VLAN 150 to MAC 02:78:00:00:04:01 and VLAN 250 to 02:78:00:00:04:02, which
# host h4 on n4 takes (and announces every 10 ms in its VLAN, so that the bridges learn it).
# With both rings complete, A's secondary (n1's p14) and B's (n3's p32) are blocked for their
# own VLANs only: A's frames go n2-n3-n4, B's n2-n1-n4.
#
# Prints `paths VLAN150 n2:p23 N ...` (h2's frames sent out of each ring port in one second, per
# VLAN range, counted by an nftables table in each node), then 12 link events, each ring link
# taken down and brought back from one end and two of them from the other too, one line each on
# stderr for the test (`event NAME lost N flow_again_ms N looped N offered N flowing FF lost_each
# A,B flow_again_each A,B`, scripts/eaps_events.py: A is VLAN 150, B VLAN 250), and a table.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/capture.sh"
BIN=${SPOTAGG_BIN:-$ROOT/target/debug/spotagg}
FRAMES="$ROOT/scripts/vlan_frames.py"
die() { echo "eaps_two_domains: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "needs root (network namespaces, veth, bridges, nftables)"
[ -x "$BIN" ] || die "no spotagg binary at $BIN: cargo build (or set SPOTAGG_BIN)"
command -v nft >/dev/null || die "no nft (Debian's nftables package)"
P=e2$$
WORK=$(mktemp -d /tmp/eaps-two-domains.XXXXXX)
declare -A DPID
PIDS=()
cleanup() {
    for p in "${DPID[@]}" "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    sleep 0.3
    for ns in $(ip netns list | awk '{print $1}' | grep "^$P-" || true); do ip netns del "$ns"; done
    [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
ns() { echo "$P-$1"; }
nx() { local n=$1; shift; ip netns exec "$(ns "$n")" "$@"; }
HELLO=10 FAIL=300 PREFWD=150
SRC=02:78:00:00:02:01 MA=02:78:00:00:04:01 MB=02:78:00:00:04:02
SIZE=446 # on the wire 442 bytes (veth carries no FCS): data frames tell from PDUs (110) by size

for n in 1 2 3 4; do
    ip netns add "$(ns n$n)"
    nx n$n sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    ip -n "$(ns n$n)" link add br0 type bridge stp_state 0
    ip -n "$(ns n$n)" link set br0 up
done
for l in 1-2 2-3 3-4 4-1; do
    a=${l%-*} b=${l#*-}
    ip link add p$a$b netns "$(ns n$a)" type veth peer name p$b$a netns "$(ns n$b)"
    ip -n "$(ns n$a)" link set p$a$b master br0 up
    ip -n "$(ns n$b)" link set p$b$a master br0 up
done
for id in 2 4; do
    ip netns add "$(ns h$id)"
    nx h$id sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    ip link add eth0 netns "$(ns h$id)" type veth peer name h$id netns "$(ns n$id)"
    ip -n "$(ns h$id)" link set eth0 up promisc on
    ip -n "$(ns n$id)" link set h$id master br0 up
done
sleep 0.3
for l in 1-2 2-3 3-4 4-1; do
    a=${l%-*} b=${l#*-}
    nx n$a bridge link set dev p$a$b state 0
    nx n$b bridge link set dev p$b$a state 0
done
# Per node: h2's frames leaving each ring port, per VLAN range (after the gates' postrouting).
for n in 1 2 3 4; do
    {
        echo "table bridge count {"
        echo "    chain out {"
        echo "        type filter hook postrouting priority 100; policy accept;"
        for p in $(ip -n "$(ns n$n)" -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep '^p'); do
            echo "        oifname \"$p\" ether saddr $SRC vlan id 100-199 counter comment \"VLAN150 n$n:$p\""
            echo "        oifname \"$p\" ether saddr $SRC vlan id 200-299 counter comment \"VLAN250 n$n:$p\""
        done
        echo "    }"
        echo "}"
    } | nx n$n nft -f -
done

vlans() { python3 -c "print(', '.join(str(v) for v in range($1, $2 + 1)))"; }
domain() { # name role primary secondary control first last
    printf '\n[[domain]]\nname = "%s"\nrole = "%s"\nprimary = "%s"\nsecondary = "%s"\ncontrol_vlan = %s\nprotected_vlans = [%s]\nhello_ms = %s\nfail_ms = %s\npre_forwarding_ms = %s\n' \
        "$1" "$2" "$3" "$4" "$5" "$(vlans "$6" "$7")" "$HELLO" "$FAIL" "$PREFWD"
}
{ echo 'bridge = "br0"'; domain A master p12 p14 10 100 199; domain B transit p14 p12 20 200 299; } >"$WORK/n1.toml"
{ echo 'bridge = "br0"'; domain A transit p21 p23 10 100 199; domain B transit p23 p21 20 200 299; } >"$WORK/n2.toml"
{ echo 'bridge = "br0"'; domain A transit p32 p34 10 100 199; domain B master p34 p32 20 200 299; } >"$WORK/n3.toml"
{ echo 'bridge = "br0"'; domain A transit p43 p41 10 100 199; domain B transit p41 p43 20 200 299; } >"$WORK/n4.toml"
for n in 1 2 3 4; do
    ip netns exec "$(ns n$n)" "$BIN" eaps --rt-priority "${EAPS_RT_PRIORITY:-10}" --config "$WORK/n$n.toml" >>"$WORK/n$n.log" 2>&1 &
    DPID[$n]=$!
done
state() { # node domain
    "$BIN" eaps status --config "$WORK/n$1.toml" 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); print([x['state'] for x in d['domains'] if x['name']=='$2'][0])" 2>/dev/null || echo none
}
for _ in $(seq 1 1200); do
    [ "$(state 1 A)" = Complete ] && [ "$(state 3 B)" = Complete ] && break
    sleep 0.05
done
[ "$(state 1 A)" = Complete ] && [ "$(state 3 B)" = Complete ] || die "the domains did not reach Complete: A $(state 1 A), B $(state 3 B)"
echo "eaps_two_domains: both domains Complete (hello $HELLO ms, fail $FAIL ms, pre-forwarding $PREFWD ms)" >&2

ip netns exec "$(ns h4)" python3 -u "$FRAMES" sink eth0 --as 150=$MA --as 250=$MB --log-prefix "$WORK/rx" --size $SIZE --seconds 900 2>"$WORK/sink.err" &
SINK=$!
PIDS+=($SINK)
sleep 0.5
ip netns exec "$(ns h2)" python3 -u "$FRAMES" stream eth0 --to 150=$MA --to 250=$MB --src $SRC --interval-ms 2 --size $SIZE --seconds 900 2>"$WORK/stream.err" &
STREAM=$!
PIDS+=($STREAM)
PING_LOGS="$WORK/rx-150 $WORK/rx-250"
flowing "$(now)" || die "h4 got no frames: $(cat "$WORK/sink.err" "$WORK/stream.err")"

read_paths() {
    for n in 1 2 3 4; do
        nx n$n nft -j list table bridge count | python3 -c '
import json, sys
for r in json.load(sys.stdin)["nftables"]:
    r = r.get("rule")
    if r and r.get("comment"):
        print(r["comment"], next(e["counter"]["packets"] for e in r["expr"] if "counter" in e))'
    done
}
before=$(read_paths)
sleep 1
after=$(read_paths)
python3 - "$before" "$after" <<'PY'
import sys
b = {" ".join(l.split()[:2]): int(l.split()[2]) for l in sys.argv[1].splitlines()}
a = {" ".join(l.split()[:2]): int(l.split()[2]) for l in sys.argv[2].splitlines()}
for v in ("VLAN150", "VLAN250"):
    print("paths", v, " ".join(f"{k.split()[1]} {a[k] - b[k]}" for k in sorted(a) if k.startswith(v)))
PY

counters() { # -> "ns ifc tx_packets tx_bytes" for every ring port and host eth0
    python3 - "$P" <<'PY'
import json, subprocess, sys
p = sys.argv[1]
for n in ("n1", "n2", "n3", "n4", "h2", "h4"):
    for l in json.loads(subprocess.check_output(["ip", "-n", f"{p}-{n}", "-s", "-j", "link", "show"])):
        if l["ifname"].startswith("p") or l["ifname"] == "eth0":
            s = l["stats64"]["tx"]; print(n, l["ifname"], s["packets"], s["bytes"])
PY
}
# One broadcast frame of each VLAN from h2: without a loop it crosses each link direction at
# most once.
bcast() { nx h2 python3 "$FRAMES" send eth0 --vlan 150 --vlan 250 --count 1 --src $SRC 2>/dev/null || true; }
link_down() { ip -n "$(ns n$1)" link set "p$1$2" down; }
link_up() { ip -n "$(ns n$1)" link set "p$1$2" up; }

EVENTS=$WORK/events
: >"$EVENTS"
for e in 1-2 3-2 4-3 1-4 2-3 3-4; do
    event "down-p${e%-*}${e#*-}" link_down ${e%-*} ${e#*-}
    event "up-p${e%-*}${e#*-}" link_up ${e%-*} ${e#*-}
    sleep 0.2
done
kill -INT $STREAM $SINK 2>/dev/null || true
wait $STREAM $SINK 2>/dev/null || true
python3 "$ROOT/scripts/eaps_events.py" "$EVENTS" --frame $((SIZE - 4)) --interval-ms 2 $PING_LOGS
echo "eaps_two_domains: done"
