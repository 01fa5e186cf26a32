"""A DDP script as docs/python.md alone teaches it (issue 35, item 5): a teacher-student MLP on 4
ranks through the spotagg hook, the switch closed in the middle of the run so that the hook
falls back to Gloo, and the process group destroyed at the end without gc.collect() or a
barrier. Run by test_exit.py: every rank must exit 0.

    python exit_script.py RANK WORLD MASTER_PORT JOB SWITCH CLOSE_FLAG_FILE
"""

import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import spotagg.torch

rank, world, port, job, switch, flag = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
torch.set_num_threads(1)
dist.init_process_group("gloo", rank=rank, world_size=world)
torch.manual_seed(0)
teacher = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 8))
student = DDP(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 8)), bucket_cap_mb=0.01)
state = spotagg.torch.HookState(switch=switch, job=job)
student.register_comm_hook(state, spotagg.torch.allreduce_hook)
opt = torch.optim.SGD(student.parameters(), lr=0.05)
g = torch.Generator().manual_seed(rank)
for step in range(40):
    if step == 20 and rank == 0:
        open(flag, "w").close()  # the test closes the switch now
    x = torch.randn(16, 32, generator=g)
    with torch.no_grad():
        y = teacher(x)
    opt.zero_grad()
    torch.nn.functional.mse_loss(student(x), y).backward()
    opt.step()
dist.destroy_process_group()
