#!/usr/bin/env python3
"""The analyzer's folders and what each may include (docs/architecture.md, analyzer/*/README.md).

Every `#include "x.h"` of analyzer/<folder>/*.[ch] is resolved to the folder holding x.h (the
folders are include directories, so a name must be unique across them). A file may include its
own folder and the folders listed for it below; the folders then form no cycle, and no header
includes itself through others. Prints each folder's includes; exits 1 on any breach.

    check_layers.py [ANALYZER_DIR]      (default: analyzer/ next to tests/)
"""
import os
import re
import sys

# folder -> the other folders it may include (lowest layer first)
ALLOWED = {
    "util": set(),
    "read": {"util"},
    "model": {"read", "util"},
    "rules": {"model", "read", "util"},
    "project": {"model", "read", "util"},
    "report": {"project", "rules", "model", "read", "util"},
}
GENERATED = {"rules": {"rules_list.h"}}  # headers the build writes (analyzer/CMakeLists.txt)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


# The shim's layers (shim/README.md): each includes only the shared private headers at the top
# of shim/, the public ones, and the headers of its own folder (named by file name alone, as
# writer/writer_internal.h: what that folder's files share, which no other folder may include);
# the launcher, a program of its own, none of the shared ones.
SHIM_FOLDERS = {"hooks", "recorder", "writer", "launcher"}
SHIM_SHARED = {"shim_internal.h", "api_ids.h"}


def check_shim(shim):
    problems = []
    if not os.path.isdir(shim):
        return problems
    for entry in sorted(os.listdir(shim)):
        path = os.path.join(shim, entry)
        if not os.path.isdir(path):
            if entry.endswith(".c"):
                problems.append(f"shim/{entry}: a source file outside the shim's folders")
            continue
        if entry not in SHIM_FOLDERS:
            problems.append(f"shim/{entry}/: a folder check_layers.py does not know")
            continue
        if not os.path.isfile(os.path.join(path, "README.md")):
            problems.append(f"shim/{entry}/: no README.md")
        for name in sorted(os.listdir(path)):
            if not name.endswith((".c", ".h")):
                continue
            with open(os.path.join(path, name), encoding="utf-8") as f:
                for inc in INCLUDE.findall(f.read()):
                    if inc.startswith("wslshim/"):
                        continue
                    own = "/" not in inc and os.path.isfile(os.path.join(path, inc))
                    if own and inc in SHIM_SHARED:
                        problems.append(f"shim/{entry}/{inc}: the same name as shim/{inc}")
                    elif own:
                        continue
                    elif entry == "launcher" or inc not in SHIM_SHARED:
                        problems.append(f"shim/{entry}/{name}: includes \"{inc}\"")
    print(f"shim/     {len(SHIM_FOLDERS)} folders: each includes only {', '.join(sorted(SHIM_SHARED))} "
          f"and its own folder's headers (the launcher not the shared ones)")
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "analyzer")
    root = os.path.normpath(root)
    problems = []
    where = {}                      # file name -> folder
    files = {}                      # (folder, name) -> included names
    for entry in sorted(os.listdir(root)):
        path = os.path.join(root, entry)
        if not os.path.isdir(path):
            if entry.endswith((".c", ".h")):
                problems.append(f"{entry}: a source file outside the folders")
            continue
        if entry not in ALLOWED:
            problems.append(f"{entry}/: a folder check_layers.py does not know (add it to ALLOWED)")
            continue
        if not os.path.isfile(os.path.join(path, "README.md")):
            problems.append(f"{entry}/: no README.md")
        for name in sorted(os.listdir(path)):
            if not name.endswith((".c", ".h")):
                continue
            if name in where:
                problems.append(f"{entry}/{name}: the same name as {where[name]}/{name}")
            where[name] = entry
            with open(os.path.join(path, name), encoding="utf-8") as f:
                files[(entry, name)] = INCLUDE.findall(f.read())
    for folder in ALLOWED:
        if not os.path.isdir(os.path.join(root, folder)):
            problems.append(f"{folder}/: missing")

    uses = {folder: set() for folder in ALLOWED}
    for (folder, name), incs in sorted(files.items()):
        for inc in incs:
            if inc.startswith("wslshim/"):
                continue        # the public headers (include/wslshim), below every folder
            if inc in GENERATED.get(folder, ()):
                continue        # written by the build into its own folder
            target = where.get(os.path.basename(inc))
            if target is None:
                problems.append(f"{folder}/{name}: includes \"{inc}\", found in no folder")
                continue
            if "/" in inc and inc.split("/")[0] != target:
                problems.append(f"{folder}/{name}: includes \"{inc}\", which lives in {target}/")
            if target == folder:
                continue
            uses[folder].add(target)
            if target not in ALLOWED[folder]:
                problems.append(f"{folder}/{name}: includes {target}/{os.path.basename(inc)} "
                                f"({folder}/ may include {', '.join(sorted(ALLOWED[folder])) or 'nothing'})")

    # Folder cycles (none can pass the table above, but the table itself is checked too).
    state = {}

    def visit(node, stack):
        state[node] = 1
        for nxt in sorted(uses[node]):
            if state.get(nxt) == 1:
                problems.append("folder cycle: " + " -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for folder in ALLOWED:
        if folder not in state:
            visit(folder, [folder])

    # Header cycles: a header that includes itself through others.
    headers = {name: [os.path.basename(i) for i in incs if not i.startswith("wslshim/")]
               for (folder, name), incs in files.items() if name.endswith(".h")}
    hstate = {}

    def hvisit(node, stack):
        hstate[node] = 1
        for nxt in headers.get(node, []):
            if nxt not in headers:
                continue
            if hstate.get(nxt) == 1:
                problems.append("header cycle: " + " -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in hstate:
                hvisit(nxt, stack + [nxt])
        hstate[node] = 2

    for h in sorted(headers):
        if h not in hstate:
            hvisit(h, [h])

    problems += check_shim(os.path.join(os.path.dirname(root), "shim"))

    counts = {}
    for (folder, _name) in files:
        counts[folder] = counts.get(folder, 0) + 1
    for folder in ALLOWED:
        inc = ", ".join(f for f in ALLOWED if f in uses[folder]) or "-"
        print(f"{folder + '/':9} {counts.get(folder, 0):3} files  includes: {inc}")
    if problems:
        for p in problems:
            print("LAYERS: " + p, file=sys.stderr)
        return 1
    print(f"layers ok: {len(files)} files, no include outside a folder's layers, "
          "no folder or header cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
