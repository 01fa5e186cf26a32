#!/usr/bin/env python3
"""The per-event table of the namespace ring scripts (scripts/eaps_ring.sh, eaps_board_ring.sh).

    eaps_events.py EVENTS --frame BYTES --interval-ms MS PING_LOG...

EVENTS has a line per event: its name, its start time (Unix seconds) and two files of link
counters taken before and after it, each a line per interface: namespace, interface, tx
packets, tx bytes (the hosts' interfaces are named eth0). Each PING_LOG is the output of
`ping -D` from one host.

Per event, from its start to the next event's:
- pings lost: replies missing from the sequence, counted where the gap ends after the event;
- flow again (ms): the longest gap between two replies, less the ping interval (0: none lost);
- frames looped: per ring link direction, the data frames sent (bytes less 110 per PDU, over the
  data frame's size less 110) beyond the frames every host sent in the window, summed;
- flowing: per ping log, in the order given, 1 when it holds a reply in the window stamped
  0.2 s or more after the event's start (the pings flow again, however long it took), else 0;
- duplicate replies (DUP! lines of ping) are counted over the whole run.

Prints a Markdown table on stdout and, on stderr, a line per event that the tests parse:
`event NAME lost N flow_again_ms N looped N offered N flowing F lost_each N,N flow_again_each
N,N`, F a digit per ping log, the `_each` lists per ping log.
"""
import argparse
import re
import sys

PDU_BYTES = 110


def replies(path):
    out, dups = [], 0
    for line in open(path):
        m = re.match(r"\[(\d+\.\d+)\] \d+ bytes from .* icmp_seq=(\d+)", line)
        if m:
            if "DUP!" in line:
                dups += 1
            else:
                out.append((float(m.group(1)), int(m.group(2))))
    return out, dups


def counters(path):
    c = {}
    for line in open(path):
        ns, ifc, pk, by = line.split()
        c[(ns, ifc)] = (int(pk), int(by))
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("events")
    ap.add_argument("--frame", type=int, required=True, help="the pings' frame size in bytes")
    ap.add_argument("--interval-ms", type=float, required=True, help="the pings' interval")
    ap.add_argument("pings", nargs="+")
    a = ap.parse_args()
    events = [line.split() for line in open(a.events)]
    pings = [replies(p) for p in a.pings]
    print("| event | pings lost | flow again (ms) | frames looped | flowing |")
    print("|---|---|---|---|---|")
    for i, (name, t0, c0, c1) in enumerate(events):
        t0 = float(t0)
        t1 = float(events[i + 1][1]) if i + 1 < len(events) else 1e18
        lost, gap, flowing = 0, 0.0, ""
        lost_each, gap_each = [], []
        for rep, _ in pings:
            win = [(t, s) for t, s in rep if t0 - 0.5 <= t < t1]
            flowing += "1" if any(t >= t0 + 0.2 for t, _ in win) else "0"
            lo, ga = 0, 0.0
            for (ta, sa), (tb, sb) in zip(win, win[1:]):
                if sb - sa > 1 and tb > t0:
                    lo += sb - sa - 1
                    ga = max(ga, (tb - ta) * 1000 - a.interval_ms)
            lost += lo
            gap = max(gap, ga)
            lost_each.append(str(lo))
            gap_each.append(f"{ga:.0f}")
        before, after = counters(c0), counters(c1)
        offered = sum(after[k][0] - before[k][0] for k in after if k[1] == "eth0")
        looped = 0
        for k in after:
            if k[1] == "eth0":
                continue
            dp, db = after[k][0] - before[k][0], after[k][1] - before[k][1]
            data = max(0, round((db - PDU_BYTES * dp) / (a.frame - PDU_BYTES)))
            looped += max(0, data - offered)
        print(f"| {name} | {lost} | {gap:.0f} | {looped} | {flowing} |")
        print(
            f"event {name} lost {lost} flow_again_ms {gap:.0f} looped {looped} offered {offered} flowing {flowing}"
            f" lost_each {','.join(lost_each)} flow_again_each {','.join(gap_each)}",
            file=sys.stderr,
        )
    print(f"duplicate replies over the run: {sum(d for _, d in pings)}")


if __name__ == "__main__":
    main()
