# Sourced by the namespace ring scripts (scripts/eaps_ring.sh, scripts/eaps_board_ring.sh).
#
# capture NS IFACE SECONDS FILE: tshark captures the EDP frames (to 00-E0-2B-00-00-04) on
# IFACE in network namespace NS for SECONDS counted from the moment the capture has started
# (tshark's `-a duration`, not a timeout that its start-up would eat into: tshark takes seconds
# to start on a loaded machine), into FILE. Returns once tshark says the capture has started
# (at most 60 s), with its process in CAPTURE_PID; without tshark it does nothing and leaves
# CAPTURE_PID empty.
capture() {
    CAPTURE_PID=
    command -v tshark >/dev/null || return 0
    local log=$4.log
    ip netns exec "$1" tshark -q -i "$2" -a "duration:$3" -w "$4" -f "ether dst 00:e0:2b:00:00:04" >/dev/null 2>"$log" &
    CAPTURE_PID=$!
    local _
    for _ in $(seq 1 600); do
        grep -q "Capture started" "$log" && return 0
        kill -0 "$CAPTURE_PID" 2>/dev/null || { echo "tshark on $1 $2 exited: $(cat "$log")" >&2; return 1; }
        sleep 0.1
    done
    echo "tshark on $1 $2 did not start capturing in 60 s" >&2
    return 1
}
