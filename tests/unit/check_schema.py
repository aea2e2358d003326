#!/usr/bin/env python3
"""Validates the JSON of real reports against docs/report-schema.json: reports of synthetic traces
covering every section (API, file I/O on ext4 and 9p, memory, kernels, each bottleneck rule, a
trace cut short, several processes) and of --compare over directories. Also checks that the
schema is strict enough: removing a contract key, or a bad severity, must fail validation.

usage: check_schema.py --report PATH --make-trace PATH --make-io-trace PATH --make-mem-trace PATH --schema PATH
Exit status 77 (skipped) when python3-jsonschema is not installed.
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    print("SKIPPED: python3 jsonschema is not installed (apt-get install python3-jsonschema)")
    sys.exit(77)


def fail(msg):
    print("FAILED: " + msg, file=sys.stderr)
    sys.exit(1)


def run(argv):
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser()
    for opt in ("--report", "--make-trace", "--make-io-trace", "--make-mem-trace", "--schema"):
        ap.add_argument(opt, required=True)
    args = ap.parse_args()
    with open(args.schema) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)

    with tempfile.TemporaryDirectory(prefix="wslshim-schema-") as work:
        def p(name):
            return os.path.join(work, name)

        traces = {}
        run([args.make_trace, p("known.trace.zst")])
        traces["known"] = p("known.trace.zst")
        run([args.make_trace, p("killed.trace.zst"), "--no-end", "--truncate-tail", "300"])
        traces["killed"] = p("killed.trace.zst")
        for s in ("drvfs", "ext4", "small_files"):
            run([args.make_io_trace, p(s + ".trace.zst"), s])
            traces[s] = p(s + ".trace.zst")
        for s in ("mixed", "peak97", "kernels", "sync_item", "alloc_churn", "small_copies", "pageable", "polls",
                  "quiet", "churn_parallel", "sync_parallel", "cmp_a", "cmp_b"):
            run([args.make_mem_trace, p(s + ".trace.zst"), s])
            traces[s] = p(s + ".trace.zst")
        os.mkdir(p("run_a"))
        os.mkdir(p("run_b"))
        for name, d in (("cmp_a", "run_a"), ("ext4", "run_a"), ("cmp_b", "run_b"), ("drvfs", "run_b"),
                        ("sync_item", "run_b")):
            os.link(traces[name], os.path.join(p(d), name + ".trace.zst"))

        reports = {name: [path] for name, path in traces.items()}
        reports["all_processes"] = [traces[n] for n in ("known", "drvfs", "mixed", "kernels", "sync_item", "pageable")]
        reports["wall_cap"] = [traces["churn_parallel"], traces["sync_parallel"]]
        reports["compare"] = ["--compare", p("run_a"), p("run_b")]
        reports["compare_reversed"] = ["--compare", traces["cmp_b"], traces["cmp_a"]]
        docs = {}
        seen_ids = set()
        for name, argv in reports.items():
            doc = json.loads(run([args.report, "--json", *argv]))
            errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
            if errors:
                e = errors[0]
                fail(f"{name}: {len(errors)} schema errors; first at {list(e.path)}: {e.message[:300]}")
            lost = [b["time_lost_ns"] for b in doc["bottlenecks"]]
            if lost != sorted(lost, reverse=True):
                fail(f"{name}: bottlenecks not sorted by time_lost_ns: {lost}")
            seen_ids |= {b["id"] for b in doc["bottlenecks"]}
            docs[name] = doc
        want = {"sync_heavy", "alloc_churn", "small_transfers", "pageable_transfers", "cross_os_reads",
                "small_file_reads", "vram_headroom", "pinned_memory", "managed_memory"}
        if not want <= seen_ids:
            fail(f"reports cover bottlenecks {sorted(seen_ids)}, not all of {sorted(want)}")
        if "compare" not in docs["compare"] or docs["compare"]["compare"]["causes"] == []:
            fail("the compare report has no causes")

        # strict enough: each mutation must make a valid report invalid
        def mutated(doc, path, action):
            d = copy.deepcopy(doc)
            obj = d
            for k in path[:-1]:
                obj = obj[k]
            if action == "delete":
                del obj[path[-1]]
            else:
                obj[path[-1]] = action
            return d

        full, cmp_doc = docs["all_processes"], docs["compare"]
        api_name = next(iter(full["api"]))
        fs_name = next(iter(full["io"]["by_fs"]))
        cmp_api = next(iter(cmp_doc["compare"]["api"]))
        mutations = [
            (full, ["wall_ns"], "delete"), (full, ["schema"], 2), (full, ["processes", 0, "pid"], "delete"),
            (full, ["processes", 0, "wsl"], "delete"), (full, ["api", api_name, "p99_ns"], "delete"),
            (full, ["api", api_name, "calls"], -1), (full, ["gpu", "kernels", 0, "count"], "delete"),
            (full, ["memory", "peak_device_bytes"], "delete"), (full, ["io", "by_fs", fs_name, "bytes_read"], "delete"),
            (full, ["io", "files_opened"], "delete"), (full, ["bottlenecks", 0, "severity"], "critical"),
            (full, ["bottlenecks", 0, "time_lost_ns"], "delete"), (full, ["bottlenecks", 0, "advice"], "delete"),
            (full, ["cuda_host", "waits", "stream_sync"], "delete"),
            (cmp_doc, ["compare", "wall_ns_a"], "delete"), (cmp_doc, ["compare", "api", cmp_api, "mean_ns_b"], "delete"),
            (cmp_doc, ["compare", "causes", 0, "attributed_ns"], "delete"), (cmp_doc, ["compare", "scale"], 1.5),
        ]
        for doc, path, action in mutations:
            if validator.is_valid(mutated(doc, path, action)):
                fail(f"the schema accepts a report with {path} {'removed' if action == 'delete' else '= ' + repr(action)}")
    print(f"schema: {len(reports)} reports valid, {len(mutations)} broken ones refused")


if __name__ == "__main__":
    main()
