#!/usr/bin/env python3
"""The PyTorch training loop behind the demo's sample trace (tests/demo/sample/).

    sample_train.py DATA_DIR [--steps 200] [--workers 2]

Makes DATA_DIR with 1024 small .npy samples if it is empty, then trains a
small MLP for --steps steps from a DataLoader with --workers worker processes,
each step in an NVTX "step" range (forward/backward/optimizer nested), with
loss.item() every step (a sync per step, as many training scripts do). Prints
the final loss. Recorded under the shim on an H200 with:
    WSLSHIM_GPU_TIMING=10 WSLSHIM_OUTPUT=tests/demo/sample/%p.trace.zst \\
        LD_PRELOAD=build/lib/libwslshim.so python3 tests/demo/sample_train.py /tmp/sample-data
"""
import argparse
import os

import numpy as np
import torch


class Files(torch.utils.data.Dataset):
    def __init__(self, root):
        self.paths = sorted(os.path.join(root, f) for f in os.listdir(root) if f.endswith(".npy"))

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        x = np.load(self.paths[i])
        return torch.from_numpy(x), int(x.sum() > 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    os.makedirs(a.data, exist_ok=True)
    if not any(f.endswith(".npy") for f in os.listdir(a.data)):
        rng = np.random.default_rng(0)
        for i in range(1024):
            np.save(os.path.join(a.data, f"{i:05d}.npy"), rng.standard_normal(256).astype(np.float32))
    torch.manual_seed(0)
    dev = "cuda"
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 2)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(Files(a.data), batch_size=32, shuffle=True, num_workers=a.workers,
                                         persistent_workers=a.workers > 0)
    step, loss = 0, None
    nvtx = torch.cuda.nvtx
    while step < a.steps:
        for x, y in loader:
            if step >= a.steps:
                break
            nvtx.range_push("step")
            x, y = x.to(dev), y.to(dev)
            nvtx.range_push("forward")
            loss = torch.nn.functional.cross_entropy(model(x), y)
            nvtx.range_pop()
            nvtx.range_push("backward")
            opt.zero_grad()
            loss.backward()
            nvtx.range_pop()
            nvtx.range_push("optimizer")
            opt.step()
            nvtx.range_pop()
            loss_value = loss.item()  # a sync every step
            nvtx.range_pop()
            step += 1
    print(f"steps {step} final loss {loss_value:.4f}")


if __name__ == "__main__":
    main()
