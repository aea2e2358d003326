#!/usr/bin/env python3
"""Per-launch host latency of a launch-bound PyTorch loop (3000 tiny adds),
for finding stalls the shim may add: prints the loop time, median, p99 and the
five slowest iterations. Run with and without the shim."""
import json
import time

import torch

x = torch.zeros(256, device="cuda")
for _ in range(200):
    x = x + 1.0
torch.cuda.synchronize()
lat = []
t0 = time.perf_counter()
for _ in range(3000):
    a = time.perf_counter_ns()
    x = x + 1.0
    lat.append(time.perf_counter_ns() - a)
torch.cuda.synchronize()
secs = time.perf_counter() - t0
s = sorted(lat)
print(json.dumps({"secs": secs, "p50_ns": s[1500], "p99_ns": s[2970], "top5_ns": s[-5:],
                  "top5_at": sorted(range(3000), key=lambda i: -lat[i])[:5]}))
