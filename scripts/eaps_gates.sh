#!/usr/bin/env bash
# Per-VLAN gates of `spotagg eaps` (docs/eaps.md §9.1) in network namespaces.
#
#   scripts/eaps_gates.sh                      (as root; SPOTAGG_BIN, default target/debug/spotagg)
#
# Node n (bridge br0, ring ports ra and rb, host port to h) runs two domains on the same two
# ports, both masters: d1 (control VLAN 10, protects 100-199) with primary ra, d2 (control VLAN
# 20, protects 200-299) with primary rb. The rest of the ring is namespace w: a bridge joining
# ra's and rb's peers (wa, wb) that carries only the ring's VLANs (10, 20, 100-299; nftables drops
# the others), and counts, per port, the frames n sends it of VLANs 150, 250, 300 and untagged.
# h sends 20 broadcast frames of each (scripts/vlan_frames.py, AF_PACKET: no 802.1Q devices).
#
# Phases, one line each (`gates <phase> wa150 N wa250 N wa300 N wa0 N wb150 N ...`):
#   complete   both domains Complete: d1 blocks rb for 100-199, d2 blocks ra for 200-299, untagged
#              frames are dropped on both, VLAN 300 (no domain's) passes both:
#              wa 150 300 = 20 20, wb 250 300 = 20 20, every other count 0
#   a-down     w's end of ra down: d1 opens rb, VLAN 150 leaves by rb; nothing leaves by ra
#   a-up       back to the counts of `complete`
# and `gates table ...` lines: the table while running, after SIGTERM (gone), after SIGKILL
# (still there) and after a restart and SIGTERM (gone); `gates status ...` the status's ports;
# `gates no-nft ...`: the daemon without nft on its PATH blocks whole ports and says why (the
# counts then: nothing leaves, each port being blocked by one domain and so out of the bridge).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${SPOTAGG_BIN:-$ROOT/target/debug/spotagg}
FRAMES="$ROOT/scripts/vlan_frames.py"
die() { echo "eaps_gates: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "needs root (network namespaces, veth, bridges, nftables)"
[ -x "$BIN" ] || die "no spotagg binary at $BIN: cargo build (or set SPOTAGG_BIN)"
command -v nft >/dev/null || die "no nft (Debian's nftables package)"
P=eg$$
WORK=$(mktemp -d /tmp/eaps-gates.XXXXXX)
DAEMON=
cleanup() {
    [ -n "$DAEMON" ] && kill "$DAEMON" 2>/dev/null || true
    sleep 0.3
    for ns in $(ip netns list | awk '{print $1}' | grep "^$P-" || true); do ip netns del "$ns"; done
    [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
ns() { echo "$P-$1"; }
nx() { local n=$1; shift; ip netns exec "$(ns "$n")" "$@"; }

for n in n w h; do
    ip netns add "$(ns $n)"
    nx $n sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
ip -n "$(ns n)" link add br0 type bridge stp_state 0
ip -n "$(ns w)" link add wbr type bridge stp_state 0
ip link add ra netns "$(ns n)" type veth peer name wa netns "$(ns w)"
ip link add rb netns "$(ns n)" type veth peer name wb netns "$(ns w)"
ip link add hp netns "$(ns n)" type veth peer name eth0 netns "$(ns h)"
for x in ra rb hp; do ip -n "$(ns n)" link set $x master br0 up; done
nx n bridge link set dev ra state 0
nx n bridge link set dev rb state 0
for x in wa wb; do ip -n "$(ns w)" link set $x master wbr up; done
ip -n "$(ns n)" link set br0 up
ip -n "$(ns w)" link set wbr up
ip -n "$(ns h)" link set eth0 up
nx w nft -f - <<'NFT'
table bridge ring {
	chain forward {
		type filter hook forward priority filter; policy drop;
		vlan id { 10, 20, 100-299 } accept
	}
	chain count {
		type filter hook prerouting priority filter; policy accept;
		iifname "wa" vlan id 150 counter comment "wa150"
		iifname "wa" vlan id 250 counter comment "wa250"
		iifname "wa" vlan id 300 counter comment "wa300"
		iifname "wa" ether type 0x88b5 counter comment "wa0"
		iifname "wb" vlan id 150 counter comment "wb150"
		iifname "wb" vlan id 250 counter comment "wb250"
		iifname "wb" vlan id 300 counter comment "wb300"
		iifname "wb" ether type 0x88b5 counter comment "wb0"
	}
}
NFT

vlans() { python3 -c "print(', '.join(str(v) for v in range($1, $2 + 1)))"; }
{
    echo 'bridge = "br0"'
    printf '[[domain]]\nname = "d1"\nrole = "master"\nprimary = "ra"\nsecondary = "rb"\ncontrol_vlan = 10\nprotected_vlans = [%s]\nhello_ms = 20\nfail_ms = 200\npre_forwarding_ms = 150\n' "$(vlans 100 199)"
    printf '[[domain]]\nname = "d2"\nrole = "master"\nprimary = "rb"\nsecondary = "ra"\ncontrol_vlan = 20\nprotected_vlans = [%s]\nhello_ms = 20\nfail_ms = 200\npre_forwarding_ms = 150\n' "$(vlans 200 299)"
} >"$WORK/n.toml"

start() {
    ip netns exec "$(ns n)" "$BIN" eaps --config "$WORK/n.toml" >>"$WORK/n.log" 2>&1 &
    DAEMON=$!
}
states() { # -> "d1state d2state", "none" while there is no status
    "$BIN" eaps status --config "$WORK/n.toml" 2>/dev/null |
        python3 -c "import json,sys; s=json.load(sys.stdin); print(' '.join(d['state'] for d in s['domains']) if not s.get('stopped') else 'stopped')" 2>/dev/null || echo none
}
wait_states() { # wanted, 30 s at most
    for _ in $(seq 1 600); do
        [ "$(states)" = "$1" ] && return 0
        sleep 0.05
    done
    die "the domains did not reach \"$1\": $(states); log: $(tail -5 "$WORK/n.log")"
}
table() { nx n nft list tables bridge | grep -c spotagg_eaps_br0 || true; }
read_counts() {
    nx w nft -j list table bridge ring | python3 -c '
import json, sys
out = {}
for r in json.load(sys.stdin)["nftables"]:
    r = r.get("rule")
    if r and r.get("comment"):
        out[r["comment"]] = next(e["counter"]["packets"] for e in r["expr"] if "counter" in e)
print(" ".join(f"{k} {out[k]}" for k in ["wa150", "wa250", "wa300", "wa0", "wb150", "wb250", "wb300", "wb0"]))'
}
counts() { # sends the frames, prints what w counted of them (nft 1.0.6 cannot reset rule counters)
    local before after
    before=$(read_counts)
    nx h python3 "$FRAMES" send eth0 --vlan 150 --vlan 250 --vlan 300 --vlan 0 --count 20 --interval-ms 1 2>/dev/null
    sleep 0.3
    after=$(read_counts)
    python3 -c '
import sys
b, a = sys.argv[1].split(), sys.argv[2].split()
print(" ".join(f"{a[i]} {int(a[i + 1]) - int(b[i + 1])}" for i in range(0, len(a), 2)))' "$before" "$after"
}

start
wait_states "Complete Complete"
echo "gates table running $(table)"
nx n nft list table bridge spotagg_eaps_br0 | sed 's/^/  /' >&2
echo "gates complete $(counts)"
"$BIN" eaps status --config "$WORK/n.toml" | python3 -c '
import json, sys
s = json.load(sys.stdin)
print("gates status mode", s["blocking"]["mode"], " ".join(f"{p['"'"'name'"'"']} {p['"'"'blocked_vlans'"'"'] or '"'"'-'"'"'} {p['"'"'untagged_blocked'"'"']}" for p in s["ports"]))'
ip -n "$(ns w)" link set wa down
wait_states "Failed Failed"
echo "gates a-down $(counts)"
ip -n "$(ns w)" link set wa up
wait_states "Complete Complete"
echo "gates a-up $(counts)"

kill -TERM $DAEMON
wait $DAEMON || die "the daemon exited with status $? on SIGTERM: $(tail -5 "$WORK/n.log")"
DAEMON=
echo "gates table after-sigterm $(table)"
nx n bridge link set dev ra state 0
nx n bridge link set dev rb state 0
start
wait_states "Complete Complete"
kill -KILL $DAEMON
wait $DAEMON 2>/dev/null || true
DAEMON=
echo "gates table after-sigkill $(table)"
start
wait_states "Complete Complete"
echo "gates restarted $(counts)"
kill -TERM $DAEMON
wait $DAEMON || die "the daemon exited with status $? on SIGTERM"
DAEMON=
echo "gates table after-restart-sigterm $(table)"
# Without nftables (no nft on its PATH, and SPOTAGG_LIBNFTABLES empty: not its library either)
# the daemon blocks whole ports and says why.
nx n bridge link set dev ra state 0
nx n bridge link set dev rb state 0
ip netns exec "$(ns n)" env PATH=/nonexistent SPOTAGG_LIBNFTABLES= "$BIN" eaps --config "$WORK/n.toml" >>"$WORK/n.log" 2>&1 &
DAEMON=$!
wait_states "Complete Complete"
"$BIN" eaps status --config "$WORK/n.toml" | python3 -c '
import json, sys
s = json.load(sys.stdin)
print("gates no-nft mode", s["blocking"]["mode"], "why", s["blocking"]["why"])'
echo "gates no-nft-table $(table) complete $(counts)"
kill -TERM $DAEMON
wait $DAEMON || die "the daemon without nft exited with status $? on SIGTERM"
DAEMON=
echo "eaps_gates: the daemon's log:" >&2
sed 's/^/  /' "$WORK/n.log" >&2
echo "eaps_gates: done"
