# Sourced by the namespace ring scripts (scripts/eaps_ring.sh, scripts/eaps_board_ring.sh).
#
# now: the time in seconds since the epoch, with nanoseconds.
#
# event NAME ACTION...: runs ACTION between two snapshots of the caller's `counters` (into
# $WORK/c0.NAME and $WORK/c1.NAME); then waits until the pings flow again (`flowing`), sends
# the caller's `bcast` and watches 0.4 s for loops; appends "NAME START C0 C1" to $EVENTS
# for scripts/eaps_events.py. If the pings do not flow again it returns 1 at once (the
# scripts run under `set -e`, so the run ends there with what `on_stuck` printed, rather than
# waiting 60 s for each event after it).
#
# flowing SINCE: waits until every ping log of $FLOW_LOGS (default $PING_LOGS; ping -D output)
# holds a reply stamped 0.2 s or more after SINCE (seconds since the epoch; the scripts run ping
# under `stdbuf -oL`, else its lines reach the file 4 KiB at a time), 60 s at most: an
# event, not a fixed sleep, so that a loaded machine only makes the run longer. Returns 1 if
# they did not, after the caller's `on_stuck` (if it defines one) has printed what it can about
# the ring on stderr. An event whose action cuts a host off names the pings that must flow:
# `FLOW_LOGS=... event NAME ACTION...`.
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

now() { date +%s.%N; }

flowing() {
    local since=$1 f last deadline=$((SECONDS + 60))
    # (A deadline on the clock: on a loaded machine each pass over the logs takes far longer
    # than its 50 ms sleep, and 1,200 passes took 110 s.)
    while [ $SECONDS -lt $deadline ]; do
        local all=1
        for f in ${FLOW_LOGS:-$PING_LOGS}; do
            last=$(sed -n 's/^\[\([0-9.]*\)\] [0-9]* bytes from .*/\1/p' "$f" | tail -n 1)
            awk -v a="${last:-0}" -v b="$since" 'BEGIN { exit !(a >= b + 0.2) }' || all=0
        done
        [ $all = 1 ] && return 0
        sleep 0.05
    done
    echo "the pings did not flow again within 60 s of $since" >&2
    # What the caller can say about the stuck ring (its `on_stuck`, if it has one).
    if declare -F on_stuck >/dev/null; then on_stuck >&2 || true; fi
    return 1
}

event() {
    local name=$1; shift
    counters >"$WORK/c0.$name"
    local t0; t0=$(now)
    "$@"
    flowing "$(now)" || { echo "event $name: the ring did not carry the pings again" >&2; return 1; }
    bcast
    # (A loop multiplies a broadcast thousands of times within milliseconds: 0.4 s shows it.)
    sleep 0.4
    counters >"$WORK/c1.$name"
    echo "$name $t0 $WORK/c0.$name $WORK/c1.$name" >>"$EVENTS"
}
