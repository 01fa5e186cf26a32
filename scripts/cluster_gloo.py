"""One rank of the Gloo all-reduce of the emulated-cluster benchmark (scripts/cluster_bench.sh).

Runs inside a worker's network namespace: torch.distributed with the Gloo backend over TCP on
the namespace's interface (GLOO_SOCKET_IFNAME), SUM all-reduce of a float32 tensor of
--elements, --runs times after one warm-up; prints one JSON line with every run's seconds.
With --fp16 the tensor is all-reduced as DDP's fp16_compress_hook does it: cast to float16,
all-reduced in float16, cast back (the casts inside the time).
"""

import argparse
import json
import os
import time

import torch
import torch.distributed as dist


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--master", required=True, help="IPv4 address of rank 0")
    p.add_argument("--port", type=int, default=29517)
    p.add_argument("--elements", type=int, required=True)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--fp16", action="store_true", help="as fp16_compress_hook: float16 on the wire")
    a = p.parse_args()
    if "GLOO_SOCKET_IFNAME" not in os.environ:
        raise SystemExit("GLOO_SOCKET_IFNAME must name the namespace's interface")
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://{a.master}:{a.port}", rank=a.rank, world_size=a.world
    )
    # Values that sum exactly in float32: rank r holds (r + 1) / 2 everywhere.
    x = torch.full((a.elements,), (a.rank + 1) / 2, dtype=torch.float32)
    expect = a.world * (a.world + 1) / 4
    dist.all_reduce(torch.ones(1024))
    times = []
    ok = True
    for _ in range(a.runs):
        y = x.clone()
        dist.barrier()
        t = time.perf_counter()
        if a.fp16:
            h = y.to(torch.float16)
            dist.all_reduce(h)
            y.copy_(h)
        else:
            dist.all_reduce(y)
        times.append(time.perf_counter() - t)
        ok = ok and bool((y == expect).all())
    print(json.dumps({"rank": a.rank, "seconds": times, "ok": ok}), flush=True)
    dist.destroy_process_group()
    if not ok:
        raise SystemExit(f"rank {a.rank}: wrong sum (expected {expect} everywhere)")


if __name__ == "__main__":
    main()
