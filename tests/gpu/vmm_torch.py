#!/usr/bin/env python3
"""PyTorch with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True under the shim:
the report's peak device bytes against torch.cuda.max_memory_reserved().

    vmm_torch.py --build BUILD --out OUT        (77 without torch or a GPU)
"""
import json
import os
import subprocess
import sys

if "--child" in sys.argv:
    import torch
    x = []
    for i in range(40):
        x.append(torch.empty((i + 1) << 20, dtype=torch.uint8, device="cuda"))
        if i % 3 == 0:
            x.pop(0)
    torch.cuda.synchronize()
    print(json.dumps({"max_reserved": torch.cuda.max_memory_reserved()}))
    sys.exit(0)
build = sys.argv[sys.argv.index("--build") + 1]
out = sys.argv[sys.argv.index("--out") + 1]
os.makedirs(out, exist_ok=True)
try:
    import torch
    if not torch.cuda.is_available():
        sys.exit(77)
except Exception:
    sys.exit(77)
env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True",
           LD_PRELOAD=os.path.abspath(os.path.join(build, "lib", "libwslshim.so")),
           WSLSHIM_OUTPUT=os.path.join(out, "%p.trace.zst"))
p = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True)
torch_peak = json.loads(p.stdout.strip().splitlines()[-1])["max_reserved"]
rep = json.loads(subprocess.run([os.path.join(build, "analyzer", "wslshim-report"), "--json", out],
                                capture_output=True, text=True, check=True).stdout)
ours = rep["memory"]["peak_device_bytes"]
creates = rep["api"].get("cuMemCreate", {}).get("calls", 0)
diff = (ours - torch_peak) / torch_peak
print(json.dumps({"shim_peak": ours, "torch_max_reserved": torch_peak, "diff": diff, "cuMemCreate": creates}))
sys.exit(0 if creates > 0 and abs(diff) <= 0.05 else 1)
