#!/usr/bin/env python3
"""A PyTorch DataLoader over a folder of small images, as an image-classification
job reads its dataset: PIL decodes each file in one of N worker processes.

    dataloader.py make DIR [--files N]       write N small JPEG files (10 classes)
    dataloader.py train DIR [--workers 4] [--steps 30] [--batch 64]

`train` prints one JSON line: files in the folder, bytes of files, batches and
samples it consumed, and the loss. Exit 77 without torch, PIL or a GPU.
"""
import argparse
import json
import os
import sys


def make(args):
    try:
        from PIL import Image
    except Exception as exc:
        print(json.dumps({"skip": f"PIL: {exc}"}))
        sys.exit(77)
    import random
    rnd = random.Random(0)
    for c in range(10):
        os.makedirs(os.path.join(args.dir, f"class{c}"), exist_ok=True)
    for i in range(args.files):
        c = i % 10
        img = Image.new("RGB", (32, 32), (rnd.randrange(256), rnd.randrange(256), (c * 25) % 256))
        img.save(os.path.join(args.dir, f"class{c}", f"img{i:06d}.jpg"), quality=90)
    print(json.dumps({"files": args.files}))


def train(args):
    try:
        import torch
        from PIL import Image
    except Exception as exc:
        print(json.dumps({"skip": str(exc)}))
        sys.exit(77)
    if not torch.cuda.is_available():
        print(json.dumps({"skip": "no GPU"}))
        sys.exit(77)
    files = []
    for root, _, names in os.walk(args.dir):
        files += [os.path.join(root, n) for n in sorted(names) if n.endswith(".jpg")]
    files.sort()
    size = sum(os.path.getsize(f) for f in files)

    class Folder(torch.utils.data.Dataset):
        def __len__(self):
            return len(files)

        def __getitem__(self, i):
            with Image.open(files[i]) as im:
                x = torch.frombuffer(bytearray(im.convert("RGB").tobytes()), dtype=torch.uint8)
            label = int(os.path.basename(os.path.dirname(files[i]))[5:])
            return x.float().div(255).view(3 * 32 * 32), label

    loader = torch.utils.data.DataLoader(Folder(), batch_size=args.batch, shuffle=True, num_workers=args.workers,
                                         generator=torch.Generator().manual_seed(0))
    model = torch.nn.Sequential(torch.nn.Linear(3072, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    batches = samples = 0
    loss = None
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        batches += 1
        samples += len(y)
        if batches >= args.steps:
            break
    print(json.dumps({"files": len(files), "bytes": size, "batches": batches, "samples": samples,
                      "loss": float(loss) if loss is not None else None, "workers": args.workers}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["make", "train"])
    ap.add_argument("dir")
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    (make if args.mode == "make" else train)(args)


if __name__ == "__main__":
    main()
