#!/usr/bin/env python3
"""Estimated register-to-register delay of every endpoint in a synth_ecp5 netlist (top.json).

A quick look at logic depth after synthesis (seconds, where place and route of the board top
takes minutes and reports one path per clock): every flip-flop and block RAM input of one clock
domain with its estimated delay and logic levels, deepest first, grouped by register.

usage: scripts/logic_depth.py build/colorlight-5a-75b-v8/top.json [--min NS] [--clock SUBSTR]
       [--top N] [--paths]

Model (calibrated on nextpnr-ecp5 reports of the board top, speed 6): each LUT4 / PFUMX / L6MUX21
level costs 0.24 ns of logic plus ~0.75 ns of routing; entering a CCU2C chain 1 level, each carry
hop 0.07 ns, leaving it through S0/S1 0.45 ns; FF clock-to-Q 0.52, setup 0.42 (DI) / 0.6 (LSR, CE);
DP16KD NOREG clock-to-output 5.8 ns, OUTREG 0.8 ns; LUT RAM read address to DO 1.0 level.
Only an estimate: it ranks endpoints by logic depth, it does not place or route.
"""
import json, sys, collections, argparse

ROUTE = 0.75
LUT = 0.24 + ROUTE

ap = argparse.ArgumentParser()
ap.add_argument("json")
ap.add_argument("--min", type=float, default=6.5)
ap.add_argument("--clock", default="clk125")
ap.add_argument("--top", type=int, default=60)
ap.add_argument("--module", default=None)
ap.add_argument("--paths", action="store_true", help="print the nets of each path")
a = ap.parse_args()

d = json.load(open(a.json))
mods = d["modules"]
top = a.module or ("top" if "top" in mods else next(n for n, m in mods.items() if m.get("attributes", {}).get("top")))
m = mods[top]
netname = {}
for n, v in m["netnames"].items():
    for b in v["bits"]:
        if isinstance(b, int) and (b not in netname or (v.get("hide_name") == 0 and netname[b][1])):
            netname[b] = (n, v.get("hide_name", 0))

driver = {}  # bit -> (cell, port)
sinks = collections.defaultdict(list)
cells = m["cells"]
for cn, c in cells.items():
    for p, bits in c["connections"].items():
        dirn = c["port_directions"].get(p, "input")
        for b in bits:
            if not isinstance(b, int):
                continue
            if dirn == "output":
                driver[b] = (cn, p)
            else:
                sinks[b].append((cn, p))

# Clock net per sequential cell.
def clk_of(c):
    t = c["type"]
    if t == "TRELLIS_FF":
        return c["connections"]["CLK"][0]
    if t == "DP16KD":
        return c["connections"].get("CLKA", [None])[0]
    if t == "TRELLIS_DPR16X4":
        return c["connections"].get("WCK", [None])[0]
    return None

def cname(b):
    return netname.get(b, (str(b), 1))[0]

memo = {}
prev = {}

def arrival(b, depth=0):
    """Arrival time (ns after the clock) at net bit b and the cell that drives it."""
    if b in memo:
        return memo[b]
    if not isinstance(b, int) or b not in driver:
        memo[b] = 0.0
        return 0.0
    cn, p = driver[b]
    c = cells[cn]
    t = c["type"]
    memo[b] = 0.0  # cut loops
    ins = []
    if t == "TRELLIS_FF":
        r = 0.52
    elif t == "DP16KD":
        port = "B" if p.startswith("DOB") else "A"
        mode = c["parameters"].get("REGMODE_" + port, "NOREG").strip()
        r = 0.8 if mode == "OUTREG" else 5.8
    elif t == "LUT4":
        ins = [c["connections"][x][0] for x in "ABCD" if x in c["connections"]]
        r = LUT
    elif t == "PFUMX":
        ins = [c["connections"][x][0] for x in ("ALUT", "BLUT", "C0")]
        r = 0.2 + 0.1
    elif t == "L6MUX21":
        ins = [c["connections"][x][0] for x in ("D0", "D1", "SD")]
        r = 0.2 + 0.1
    elif t == "CCU2C":
        if p == "COUT":
            ins = [c["connections"]["CIN"][0]]
            r = 0.07
            others = [c["connections"][x][0] for x in ("A0", "B0", "C0", "D0", "A1", "B1", "C1", "D1") if x in c["connections"]]
            best = max([(arrival(x) + LUT, x) for x in others] + [(arrival(ins[0]) + r, ins[0])])
            memo[b] = best[0]
            prev[b] = best[1]
            return best[0]
        else:
            k = p[-1]
            ins = [c["connections"][x + k][0] for x in "ABCD" if x + k in c["connections"]] + [c["connections"]["CIN"][0]]
            r = 0.45
            best = max((arrival(x) + (LUT if x != c["connections"]["CIN"][0] else r), x) for x in ins)
            memo[b] = best[0]
            prev[b] = best[1]
            return best[0]
    elif t == "TRELLIS_DPR16X4":
        ins = [c["connections"][x][0] for x in c["connections"] if x.startswith("RAD")]
        r = LUT + 0.3
    else:
        r = 0.0
    if ins:
        best = max((arrival(x), x) for x in ins)
        memo[b] = best[0] + r
        prev[b] = best[1]
    else:
        memo[b] = r
    return memo[b]

sys.setrecursionlimit(100000)
clock_bits = set(b for n, v in m["netnames"].items() if a.clock in n for b in v["bits"] if isinstance(b, int))
ends = []
for cn, c in cells.items():
    t = c["type"]
    ck = clk_of(c)
    if ck is None or (a.clock and ck not in clock_bits):
        continue
    if t == "TRELLIS_FF":
        for p, setup in (("DI", 0.42), ("LSR", 0.6), ("CE", 0.6), ("M", 0.42)):
            if p in c["connections"]:
                b = c["connections"][p][0]
                ends.append((arrival(b) + setup, cn, p, b))
    elif t in ("DP16KD", "TRELLIS_DPR16X4"):
        for p, bits in c["connections"].items():
            if c["port_directions"].get(p) == "input" and not p.startswith("CLK") and p != "WCK":
                for b in bits:
                    if isinstance(b, int):
                        ends.append((arrival(b) + 0.4, cn, p, b))

ends.sort(reverse=True)
seen = set()
shown = 0
for est, cn, p, b in ends:
    if est < a.min or shown >= a.top:
        break
    # group by endpoint register name
    key = cn.split("_TRELLIS_FF")[0].split("$")[0] + ":" + p
    if key in seen:
        continue
    seen.add(key)
    shown += 1
    chain = []
    x = b
    while x in prev:
        chain.append(x)
        x = prev[x]
    chain.append(x)
    src = driver.get(x, ("?", "?"))[0]
    print(f"{est:5.2f} ns  {len(chain)-1:2d} levels  {src[:70]}  ->  {cn[:70]}.{p}")
    if a.paths:
        for y in reversed(chain[:-1]):
            print(f"            {cname(y)[:110]}")
print(f"{len(ends)} endpoints, {sum(1 for e in ends if e[0] >= a.min)} at or above {a.min} ns")
