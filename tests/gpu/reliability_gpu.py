#!/usr/bin/env python3
"""Reliability on a GPU: a PyTorch training run with 4 DataLoader worker
processes reading a folder of small files, checkpoints written with
torch.save, and a SIGTERM near the end that the program handles the way
trainers do (its own handler saves a checkpoint, then puts the default action
back and dies of SIGTERM). Run once without the shim and once under it:

  - exit status (killed by SIGTERM), stdout and stderr are the same;
  - the checkpoints are byte-identical (deterministic training);
  - every process's trace reads (the trainer, its 4 workers, anything else it
    started), the trainer's ended by the shim's signal flush (not cut short)
    and holding kernel launches, the workers' holding the data files' reads.

    python3 tests/gpu/reliability_gpu.py --build BUILD --out OUT --seconds 120

--seconds bounds the whole check (two runs). Exit 0 pass, 1 fail, 77 skip
(no torch or no GPU). Writes OUT/summary.json.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

TRAIN = r'''
import os, signal, sys, time
import torch

data_dir, ckpt_dir, steps, budget = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
files = sorted(os.path.join(data_dir, f) for f in os.listdir(data_dir))

class Files(torch.utils.data.Dataset):
    def __len__(self):
        return len(files)
    def __getitem__(self, i):
        with open(files[i], "rb") as f:
            raw = f.read()
        x = torch.frombuffer(bytearray(raw[:256]), dtype=torch.uint8).float() / 255.0
        return x, int(raw[0]) % 10

model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
g = torch.Generator()
g.manual_seed(0)
loader = torch.utils.data.DataLoader(Files(), batch_size=64, shuffle=True, num_workers=4, generator=g,
                                     persistent_workers=True, multiprocessing_context="fork")
step = 0
term_at = steps - 3

def on_term(signum, frame):
    print(f"SIGTERM at step {step}: saving", flush=True)
    torch.save(model.state_dict(), os.path.join(ckpt_dir, "on-sigterm.pt"))
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(10)
    print("not reached", flush=True)

signal.signal(signal.SIGTERM, on_term)
t0 = time.time()
while True:
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % 50 == 0:
            torch.save(model.state_dict(), os.path.join(ckpt_dir, f"step{step}.pt"))
            print(f"step {step} loss {loss.item():.4f}", flush=True)
        if step == term_at:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(10)
        if time.time() - t0 > budget:
            print("budget exceeded before the planned SIGTERM", flush=True)
            sys.exit(3)
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--files", type=int, default=4000)
    a = ap.parse_args()
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("no GPU")
    except Exception as exc:
        print(f"SKIP: {exc}")
        return 77
    shim = os.path.join(os.path.abspath(a.build), "lib", "libwslshim.so")
    report = shutil.which("wslshim-report", path=os.path.join(os.path.abspath(a.build), "analyzer")) or \
        os.path.join(os.path.abspath(a.build), "bin", "wslshim-report")
    out = os.path.abspath(a.out)
    shutil.rmtree(out, ignore_errors=True)
    data = os.path.join(out, "data")
    os.makedirs(data)
    for i in range(a.files):
        with open(os.path.join(data, f"f{i:06d}.bin"), "wb") as f:
            f.write(bytes((i * 7 + j * 13) % 256 for j in range(1024)))
    with open(os.path.join(out, "train.py"), "w") as f:
        f.write(TRAIN)
    # steps: a rough fit to the time (each run gets under half of it)
    steps = max(60, int(a.seconds * 4))
    per_run = a.seconds / 2

    results = {}
    for name, traced in (("plain", False), ("traced", True)):
        ckpt = os.path.join(out, name, "ckpt")
        traces = os.path.join(out, name, "traces")
        os.makedirs(ckpt)
        os.makedirs(traces)
        env = dict(os.environ, CUBLAS_WORKSPACE_CONFIG=":4096:8", PYTHONHASHSEED="0")
        env.pop("LD_PRELOAD", None)
        if traced:
            env.update(LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(traces, "%p.trace.zst"))
        t0 = time.time()
        p = subprocess.run([sys.executable, os.path.join(out, "train.py"), data, ckpt, str(steps), str(per_run * 0.9)],
                           env=env, capture_output=True, text=True, timeout=per_run + 30)
        # the workers notice their parent is gone and leave; give them time to end their traces
        deadline = time.time() + 15
        while time.time() < deadline and subprocess.run(["pgrep", "-f", os.path.join(out, "train.py")],
                                                         capture_output=True).returncode == 0:
            time.sleep(0.5)
        results[name] = {"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr, "wall_s": time.time() - t0,
                         "ckpts": {f: open(os.path.join(ckpt, f), "rb").read() for f in sorted(os.listdir(ckpt))}}

    fails = []
    A, B = results["plain"], results["traced"]
    if A["rc"] != -signal.SIGTERM:
        fails.append(f"the plain run did not die of SIGTERM: {A['rc']} {A['stderr'][-500:]}")
    for k in ("rc", "stdout", "stderr"):
        if A[k] != B[k]:
            fails.append(f"{k} differs: plain {A[k]!r:.600} / traced {B[k]!r:.600}")
    if list(A["ckpts"]) != list(B["ckpts"]):
        fails.append(f"checkpoints differ in names: {list(A['ckpts'])} / {list(B['ckpts'])}")
    elif any(A["ckpts"][f] != B["ckpts"][f] for f in A["ckpts"]):
        fails.append("checkpoint contents differ (training not deterministic, or changed by the shim)")
    if "on-sigterm.pt" not in B["ckpts"]:
        fails.append("the program's SIGTERM handler did not save its checkpoint under the shim")

    traces = os.path.join(out, "traced", "traces")
    per = []
    for t in sorted(os.listdir(traces)):
        r = subprocess.run([report, "--json", os.path.join(traces, t)], capture_output=True, text=True)
        if r.returncode != 0:
            fails.append(f"trace {t} does not read: {r.stderr.strip()}")
            continue
        d = json.loads(r.stdout)
        pr = d["processes"][0]
        per.append({"trace": t, "pid": pr["pid"], "ppid": pr["ppid"], "exe": pr["exe"], "forked": pr["forked"],
                    "truncated": pr["truncated"], "events": pr["events"], "dropped": pr["dropped"],
                    "launches": sum(v["calls"] for k, v in d["api"].items() if k.startswith("cuLaunch")),
                    "reads": d["io"]["reads"]})
    trainer = [p for p in per if p["launches"] > 0]
    workers = [p for p in per if p["forked"] and trainer and p["ppid"] == trainer[0]["pid"] and p["reads"] >= 1]
    if len(trainer) != 1:
        fails.append(f"expected one process with kernel launches, got {trainer}")
    elif trainer[0]["truncated"]:
        fails.append("the trainer's trace was cut short: the SIGTERM flush did not run")
    if len(workers) < 4:
        fails.append(f"expected 4 DataLoader workers' traces with reads, got {len(workers)}: {per}")
    summary = {"ok": not fails, "failures": fails, "steps": steps, "rc": B["rc"],
               "wall_s": {k: round(v["wall_s"], 1) for k, v in results.items()}, "traces": per}
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    for f_ in fails:
        print("FAIL", f_)
    if fails:
        return 1
    print(f"OK: {len(per)} traces read back ({len(workers)} workers), exit {B['rc']} and output as without the shim; "
          f"wall {summary['wall_s']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
