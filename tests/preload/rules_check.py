#!/usr/bin/env python3
"""The host-side rules end to end: rules_client's loops run under the shim against the fake
driver, and the report must name the bottleneck each loop was written to show (and no other
host-side one), with the copies classified as the client made them.

    rules_check.py SHIM REPORT FAKE_LIB_DIR CLIENT WORKDIR"""
import json
import os
import shutil
import subprocess
import sys

HOST_RULES = {"sync_heavy", "alloc_churn", "small_transfers", "pageable_transfers"}
CASES = {
    # mode: (fake driver costs, the host-side rules expected)
    "sync": ({"FAKE_CUDA_SYNC_NS": "1000000"}, {"sync_heavy"}),
    "item": ({"FAKE_CUDA_SYNC_NS": "300000"}, {"sync_heavy"}),
    "pageable": ({"FAKE_CUDA_COPY_NS": "200000"}, {"pageable_transfers"}),
    "churn": ({"FAKE_CUDA_ALLOC_NS": "80000", "FAKE_CUDA_FREE_NS": "60000"}, {"alloc_churn"}),
    "quiet": ({"FAKE_CUDA_SYNC_NS": "1000000"}, set()),
}


def main():
    shim, report, fakedir, client, work = sys.argv[1:6]
    failures = []
    for mode, (costs, want) in CASES.items():
        tdir = os.path.join(work, mode)
        shutil.rmtree(tdir, ignore_errors=True)
        os.makedirs(tdir)
        env = dict(os.environ, LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(tdir, "%p.trace.zst"),
                   LD_LIBRARY_PATH=fakedir, **costs)
        p = subprocess.run([client, mode], env=env, capture_output=True, text=True)
        if p.returncode != 0:
            failures.append(f"{mode}: client exited {p.returncode}: {p.stderr.strip()}")
            continue
        r = subprocess.run([report, "--json", tdir], capture_output=True, text=True)
        if r.returncode != 0:
            failures.append(f"{mode}: report exited {r.returncode}: {r.stderr.strip()}")
            continue
        rep = json.loads(r.stdout)
        found = {b["id"]: b for b in rep["bottlenecks"]}
        got = set(found) & HOST_RULES
        if got != want:
            failures.append(f"{mode}: host-side bottlenecks {sorted(got)}, expected {sorted(want)}: "
                            f"{ {k: (b['time_lost_ns'], b['summary']) for k, b in found.items()} }")
        h = rep["cuda_host"]
        w = h["waits"]
        lost = found.get("sync_heavy", {}).get("time_lost_ns", 0)
        blocked = sum(v["blocked_ns"] for v in w.values())
        if mode == "sync":
            # the GPU (here: nothing) drains during each 1 ms synchronize; what is lost is the refill
            # gap: the 100 us of host work and the next launch, far less than the waits
            if w["stream_sync"]["count"] != 300:
                failures.append(f"sync: waits {w}")
            if not (299 * 100000 <= lost < 0.5 * blocked):
                failures.append(f"sync: time lost {lost} ns for {blocked} ns blocked; expected the gaps, "
                                f"at least 299 x 100 us and well under the waits")
        if mode == "item":
            # the copy drains the stream, so the GPU is idle through the synchronize after it: the gap
            # from the copy's end to the next launch covers the whole synchronize, which is lost
            if w["stream_sync"]["count"] != 300 or w["blocking_copy"]["count"] != 300:
                failures.append(f"item: waits {w}")
            if not (0.95 * blocked * 299 / 300 <= lost <= blocked):
                failures.append(f"item: time lost {lost} ns, expected about the {blocked} ns blocked")
        if mode == "pageable":
            c = h["copies"]
            if (c["pageable"], c["pinned"], c["htod"], c["pageable_htod"]) != (200, 200, 400, 200):
                failures.append(f"pageable: copies {c}")
            # each pageable copy: its host time less one submission (the median launch)
            lost = found.get("pageable_transfers", {}).get("time_lost_ns", 0)
            want = c["pageable_host_ns"] - 200 * h["submit_ns"]
            if abs(lost - want) > 1000:
                failures.append(f"pageable: time lost {lost} ns, expected {want} "
                                f"({c['pageable_host_ns']} ns of copies - 200 x {h['submit_ns']} ns)")
        if mode == "churn":
            ev = found.get("alloc_churn", {}).get("evidence", {})
            if ev.get("reallocations") != 299:
                failures.append(f"churn: evidence {ev}")
        print(f"{mode}: {sorted(got) or 'none'}; " +
              ", ".join(f"{k} {v['time_lost_ns'] / 1e6:.2f} ms" for k, v in found.items()))
    if failures:
        sys.exit("FAIL: " + "\n".join(failures))
    print("OK")


if __name__ == "__main__":
    main()
