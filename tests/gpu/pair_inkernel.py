#!/usr/bin/env python3
# Event pair vs CUPTI vs the kernel's own %globaltimer, on a queued stream and an idle GPU.
import cupy as cp, statistics as st, torch
from torch.profiler import profile, ProfilerActivity
src = r'''
extern "C" __global__ void spin(unsigned long long *out, unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
  if (threadIdx.x == 0) { out[0] = t0; out[1] = t; }
}'''
k = cp.RawKernel(src, 'spin')
big = cp.random.rand(4096, 4096, dtype=cp.float32)
s = cp.cuda.get_current_stream()
N = 100
def run(S, queued, events=True):
    outs = cp.zeros((N, 2), dtype=cp.uint64)
    ev = []
    for i in range(N):
        if queued: big @ big
        if events:
            e0 = cp.cuda.Event(); e1 = cp.cuda.Event(); e0.record(s)
        k((1,), (32,), (outs[i], cp.uint64(S)))
        if events:
            e1.record(s); ev.append((e0, e1))
        if not queued: s.synchronize()
    s.synchronize()
    o = outs.get()
    ink = [(int(b) - int(a)) / 1000 for a, b in o]
    pr = [cp.cuda.get_elapsed_time(a, b) * 1000 for a, b in ev] if events else []
    return pr, ink
run(1000, True); run(1000, False)
for queued in (True, False):
    for S in (0, 2000, 10000, 50000):
        pr, ink = run(S, queued)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            _, ink2 = run(S, queued, events=False)
        cu = [e.device_time for e in prof.events() if e.device_type.name == 'CUDA' and e.name == 'spin']
        print(f"{'queued' if queued else 'idle  '} S={S:6d}: pair {st.median(pr):8.2f}  inkernel {st.median(ink):8.2f}  "
              f"cupti {st.median(cu) if cu else float('nan'):8.2f} (n={len(cu)}, inkernel there {st.median(ink2):8.2f})  "
              f"pair-cupti {st.median(pr)-st.median(cu) if cu else float('nan'):6.2f}  pair-inkernel {st.median(pr)-st.median(ink):6.2f}  "
              f"cupti-inkernel {st.median(cu)-st.median(ink2) if cu else float('nan'):6.2f}  min inkernel {min(ink):.3f}")
