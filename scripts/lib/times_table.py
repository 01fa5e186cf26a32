"""The table of scripts/test-times.sh, from its tests.tsv and tools.tsv (see there)."""
import collections
import sys

out, total = sys.argv[1], float(sys.argv[2])
tests = {}
for line in open(f"{out}/tests.tsv"):
    binary, name, wall, cpu, rc = line.rstrip("\n").split("\t")
    tests[(binary, name)] = (float(wall), float(cpu), int(rc))
tools = collections.defaultdict(lambda: collections.Counter())
for line in open(f"{out}/tools.tsv"):
    binary, name, tool, wall, cpu, _rc = line.rstrip("\n").split("\t")
    tools[(binary, name)][tool] += float(cpu)


def spent(wall, cpu, tool_cpu):
    """What the time went on: the tools by name, in-process CPU, and waiting (wall - CPU)."""
    parts = [(f"{t} {s:.0f}", s) for t, s in tool_cpu.items() if s >= 0.5]
    own = cpu - sum(tool_cpu.values())
    if own >= 0.5:
        parts.append((f"in-process {own:.0f}", own))
    if wall - cpu >= 0.5:
        parts.append((f"waiting {wall - cpu:.0f}", wall - cpu))
    parts.sort(key=lambda p: -p[1])
    return ", ".join(p[0] for p in parts) or "-"


per_bin = collections.defaultdict(lambda: [0, 0.0, 0.0, collections.Counter(), 0])
for key, (wall, cpu, rc) in tests.items():
    b = per_bin[key[0]]
    b[0] += 1
    b[1] += wall
    b[2] += cpu
    b[3].update(tools[key])
    b[4] += rc != 0
print(f"{len(tests)} tests; the run took {total:.0f} s of wall time, "
      f"the tests {sum(t[0] for t in tests.values()):.0f} s of wall and "
      f"{sum(t[1] for t in tests.values()):.0f} s of CPU one after another\n")
print("| binary | tests | wall s | CPU s | CPU seconds spent on (and waiting) | failed |")
print("|---|---|---|---|---|---|")
for name, (n, wall, cpu, tc, failed) in sorted(per_bin.items(), key=lambda kv: -kv[1][1]):
    print(f"| {name} | {n} | {wall:.1f} | {cpu:.1f} | {spent(wall, cpu, tc)} | {failed or ''} |")
print("\n| test (binary: test) | wall s | CPU s | CPU seconds spent on (and waiting) |")
print("|---|---|---|---|")
for key, (wall, cpu, rc) in sorted(tests.items(), key=lambda kv: -kv[1][0]):
    if wall > 5:
        fail = " (FAILED)" if rc else ""
        print(f"| {key[0]}: {key[1]}{fail} | {wall:.1f} | {cpu:.1f} | {spent(wall, cpu, tools[key])} |")
