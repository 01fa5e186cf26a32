#!/usr/bin/env bash
# `spotagg eaps` in a ring with an EAPS master that is not ours (issue 41; docs/eaps.md §1, §4).
#
#   scripts/eaps_interop.sh                    (as root; SPOTAGG_BIN, default target/debug/spotagg)
#
# Four node namespaces, each a Linux bridge `br0`, ring n1 - n2 - n3 - n4 - n1 (port pIJ on node
# i towards node j). n1 runs scripts/eaps_master.py, an independent RFC 3619 master that sends
# its PDUs as Allied Telesis EPSR does (EAPS TLV + null TLV, EDP length 84); n2, n3 and n4 run
# `spotagg eaps` as transits (hello 10 ms, fail 300 ms, pre-forwarding 150 ms, control VLAN 10),
# blocking whole ports (`blocking = "port"`: the other namespace rings run the per-VLAN gates).
# Hosts h2 on n2 and h4 on n4 (10.78.0.N, static neighbours); h2 pings h4 every 10 ms; their
# path is n2-n3-n4 while the ring is complete.
#
# Phases, one line each (`interop <name> key value ...`):
#   ring-up      the transits open on the master's RING-UP (their last transition's cause)
#   link-down    n2-n3 down: the master's RING-DOWN flushes the transits; the pings flow again
#                (flowed 1: a reply within 60 s; gap_ms: longest gap between replies minus the
#                10 ms period)
#   link-up      n2-n3 back: RING-UP opens the restored ports (cause RingUpFlush), 0 looped
#                broadcast probes (h2 sends 40, h4 counts copies)
#   silent       n2-n3 down again (master Failed, secondary open), the master stopped (SIGSTOP:
#                no HEALTH), n2-n3 back; 1.2 s later (8 pre-forwarding periods) the restored ports
#                are still blocked and the probes are counted (looped = copies beyond the first);
#                then SIGCONT: HEALTH returns, RING-UP opens them
#   malformed    the master's node sends n2 a HEALTH with a bad checksum, one truncated to 60 bytes
#                and one of EAPS version 2: n2 counts each by reason and forwards none (n3's
#                counters unchanged)
#   tshark       n2's own LINK-DOWN (n2-n3 down once more) decoded: EAPS type, TLV types, checksum
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/capture.sh"
BIN=${SPOTAGG_BIN:-$ROOT/target/debug/spotagg}
MASTER="$ROOT/scripts/eaps_master.py"
die() { echo "eaps_interop: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "needs root (network namespaces, veth, bridges)"
[ -x "$BIN" ] || die "no spotagg binary at $BIN: cargo build (or set SPOTAGG_BIN)"
P=ei$$
WORK=$(mktemp -d /tmp/eaps-interop.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
    sleep 0.3
    for ns in $(ip netns list | awk '{print $1}' | grep "^$P-" || true); do ip netns del "$ns"; done
    [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
ns() { echo "$P-$1"; }
nx() { local n=$1; shift; ip netns exec "$(ns "$n")" "$@"; }

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
    nx n$a bridge link set dev p$a$b state 0
    nx n$b bridge link set dev p$b$a state 0
done
for id in 2 4; do
    ip netns add "$(ns h$id)"
    nx h$id sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    ip link add eth0 netns "$(ns h$id)" address "02:78:00:00:00:0$id" type veth peer name h$id netns "$(ns n$id)"
    ip -n "$(ns h$id)" addr add 10.78.0.$id/24 dev eth0
    ip -n "$(ns h$id)" link set eth0 up
    ip -n "$(ns n$id)" link set h$id master br0 up
done
ip -n "$(ns h2)" neigh add 10.78.0.4 lladdr 02:78:00:00:00:04 dev eth0 nud permanent
ip -n "$(ns h4)" neigh add 10.78.0.2 lladdr 02:78:00:00:00:02 dev eth0 nud permanent

transit() { # node primary secondary
    printf 'bridge = "br0"\nblocking = "port"\n[[domain]]\nname = "ring"\nrole = "transit"\nprimary = "%s"\nsecondary = "%s"\ncontrol_vlan = 10\nprotected_vlans = [100]\nhello_ms = 10\nfail_ms = 300\npre_forwarding_ms = 150\n' \
        "$2" "$3" >"$WORK/n$1.toml"
    ip netns exec "$(ns n$1)" "$BIN" eaps --rt-priority "${EAPS_RT_PRIORITY:-10}" --config "$WORK/n$1.toml" >"$WORK/n$1.log" 2>&1 &
    PIDS+=($!)
}
# (ip netns exec itself in the background, not the nx function: $! is then the master's own
# process, which the silent-master phase stops with SIGSTOP; a function would be a subshell.)
ip netns exec "$(ns n1)" python3 -u "$MASTER" master --bridge br0 --primary p12 --secondary p14 --vlan 10 --hello-ms 10 --fail-ms 300 \
    --status "$WORK/master.json" >"$WORK/master.log" 2>&1 &
MPID=$!
PIDS+=($MPID)
transit 2 p21 p23
transit 3 p32 p34
transit 4 p43 p41

# jq-free status reads: python prints a field of a daemon's status JSON.
st() { # node expr (python, `d` is the first domain, `s` the document)
    python3 -c "import json,sys; s=json.load(open('$WORK/n$1.toml.status.json')); d=s['domains'][0]; print($2)"
}
wait_for() { # seconds description command...
    local t=$1 what=$2; shift 2
    local end=$(($(date +%s%N) + t * 1000000000))
    until "$@" >/dev/null 2>&1; do
        [ "$(date +%s%N)" -lt "$end" ] || die "timed out after ${t} s waiting for $what"
        sleep 0.05
    done
}
links_up() { [ "$(st "$1" "d['state']")" = LinksUp ]; }
cause_is() { [ "$(st "$1" "(d['last_transition'] or {}).get('cause')")" = "$2" ]; }
master_is() { python3 -c "import json; assert json.load(open('$WORK/master.json'))['state'] == '$1'"; }

wait_for 10 "the master Complete" master_is Complete
for n in 2 3 4; do wait_for 10 "n$n Links-Up" links_up $n; done
echo "interop ring-up causes $(st 2 "d['last_transition']['cause']") $(st 3 "d['last_transition']['cause']") $(st 4 "d['last_transition']['cause']")"

ping_run() { # name seconds: pings h2 -> h4 every 10 ms into $WORK/ping-name; its pid in $PP
    ip netns exec "$(ns h2)" ping -D -i 0.01 -w "$2" -W 1 10.78.0.4 >"$WORK/ping-$1" 2>&1 &
    PP=$!
}
gap_ms() { # the longest gap between replies, minus the 10 ms period
    python3 - "$1" <<'EOF'
import re, sys
t = [float(m.group(1)) for m in re.finditer(r"^\[(\d+\.\d+)\].*bytes from", open(sys.argv[1]).read(), re.M)]
g = max((b - a for a, b in zip(t, t[1:])), default=0.0)
print(f"{max(0.0, g * 1e3 - 10):.0f} replies {len(t)}")
EOF
}
probes() { # count of copies and distinct probes h4 saw of 40 sent by h2
    nx h4 python3 -u "$MASTER" count eth0 1.4 >"$WORK/count" &
    local c=$!
    sleep 0.2
    nx h2 python3 "$MASTER" probe eth0 40 --every-ms 20
    wait $c
    read -r _ got distinct <"$WORK/count"
    echo "probes $got distinct $distinct looped $((got - distinct))"
}

# link-down: n2-n3 fails while h2 pings h4; the pings must flow again (an event, 60 s at most:
# a loaded machine only makes the gap longer, and the gap is printed, not bounded).
ping_run down 90
sleep 0.5
since=$(now)
ip -n "$(ns n2)" link set p23 down
wait_for 5 "the master Failed" master_is Failed
flowed=1
PING_LOGS=$WORK/ping-down flowing "$since" || flowed=0
sleep 0.3
kill -INT $PP 2>/dev/null || true
wait $PP || true
echo "interop link-down gap_ms $(gap_ms "$WORK/ping-down") flowed $flowed master $(python3 -c "import json; print(json.load(open('$WORK/master.json'))['state'])")"

# link-up: RING-UP opens the restored ports, nothing loops.
ping_run up 2
sleep 0.3
ip -n "$(ns n2)" link set p23 up
wait_for 5 "the master Complete again" master_is Complete
wait_for 5 "n2 Links-Up" links_up 2
wait_for 5 "n3 Links-Up" links_up 3
wait $PP || true
echo "interop link-up gap_ms $(gap_ms "$WORK/ping-up") causes $(st 2 "d['last_transition']['cause']") $(st 3 "d['last_transition']['cause']") $(probes)"

# silent: the master Failed with its secondary open, then stopped; the link comes back.
ip -n "$(ns n2)" link set p23 down
wait_for 5 "the master Failed" master_is Failed
sleep 0.1
kill -STOP $MPID
ip -n "$(ns n2)" link set p23 up
sleep 1.2
blocked="$(st 2 "d['secondary']['forwarding']") $(st 3 "d['primary']['forwarding']")"
echo "interop silent states $(st 2 "d['state']") $(st 3 "d['state']") restored_forwarding $blocked $(probes)"
kill -CONT $MPID
wait_for 5 "the master Complete after it speaks again" master_is Complete
wait_for 5 "n2 Links-Up after the master speaks" links_up 2
wait_for 5 "n3 Links-Up after the master speaks" links_up 3
echo "interop silent-resumed causes $(st 2 "d['last_transition']['cause']") $(st 3 "d['last_transition']['cause']")"

# malformed: three damaged PDUs sent to n2 from n1's port p12 (the master's primary).
before3=$(st 3 "d['pdus']['rx']")
for k in bad-checksum truncated v2; do nx n1 python3 "$MASTER" send p12 "$k" --vlan 10; done
counted() { [ "$(st 2 "sum(d['malformed'].values())")" -ge 3 ]; }
wait_for 5 "n2 counting the malformed PDUs" counted
sleep 0.1
echo "interop malformed n2 $(st 2 "' '.join(f'{k} {v}' for k, v in d['malformed'].items())") n3_malformed $(st 3 "sum(d['malformed'].values())") n3_rx_delta $(($(st 3 "d['pdus']['rx']") - before3)) n2_forwarded_health_only $(st 2 "d['pdus']['forwarded']")"

# tshark: n2's own LINK-DOWN, captured on p21 as n2-n3 goes down.
if command -v tshark >/dev/null; then
    capture "$(ns n2)" p21 3 "$WORK/p21.pcap"
    ip -n "$(ns n2)" link set p23 down
    wait "$CAPTURE_PID" || true
    tshark -r "$WORK/p21.pcap" -Y "edp.eaps.type == 8" -T fields -e edp.eaps.type -e edp.tlv.type -e edp.checksum.status -e edp.length 2>/dev/null |
        sort | uniq -c | sed 's/^/interop tshark /'
fi
echo "eaps_interop: done"
