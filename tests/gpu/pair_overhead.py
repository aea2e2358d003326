#!/usr/bin/env python3
# What an event pair adds to the kernel it brackets, against CUPTI (torch.profiler), and what an
# empty pair measures: idle GPU and queued stream, several kernel sizes.
import torch, statistics as st, json, os, sys
from torch.profiler import profile, ProfilerActivity
torch.cuda.init()
dev = torch.device('cuda')
s = torch.cuda.current_stream()
big = torch.randn(4096, 4096, device=dev)
sizes = {'add_256': 256, 'add_64k': 65536, 'add_4M': 4 << 20, 'add_32M': 32 << 20}
bufs = {k: torch.zeros(n, device=dev) for k, n in sizes.items()}
def pairs(kind, queued, reps=200):
    out = []
    evs = []
    for i in range(reps):
        if queued:
            torch.mm(big, big)  # keep the stream busy ahead of the pair
        e0 = torch.cuda.Event(enable_timing=True); e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        if kind != 'empty':
            bufs[kind].add_(1.0)
        e1.record()
        evs.append((e0, e1))
        if not queued:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return [a.elapsed_time(b) * 1000 for a, b in evs]  # us
res = {}
for queued in (False, True):
    for kind in ['empty'] + list(sizes):
        v = pairs(kind, queued)
        res[f"{'queued' if queued else 'idle'} {kind} pair"] = (st.median(v), min(v))
# CUPTI durations of the same kernels
for queued in (False, True):
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for kind in sizes:
            for i in range(200):
                if queued: torch.mm(big, big)
                bufs[kind].add_(1.0)
                if not queued: torch.cuda.synchronize()
        torch.cuda.synchronize()
    ks = sorted((e.time_range.start, e.device_time) for e in prof.events()
                if e.device_type.name == 'CUDA' and 'elementwise' in e.name)
    for j, kind in enumerate(sizes):
        v = [d for _, d in ks[j * 200:(j + 1) * 200]]
        res[f"{'queued' if queued else 'idle'} {kind} cupti"] = (st.median(v), min(v), len(v))
for k, v in res.items():
    print(k, v)
