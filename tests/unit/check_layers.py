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


# The shim's layers (shim/README.md): each includes the shared private headers at the top of
# shim/, the public ones, and the private headers of its own folder (hooks/io/io_hooks.h is the
# file hooks' alone); the launcher, a program of its own, none of the shim's. The shared headers
# include no folder's header, no header includes itself through others, and no library source
# file declares anything `extern` (what one file takes from another comes through a header).
SHIM_FOLDERS = {"hooks", "hooks/io", "recorder", "writer", "common", "launcher"}
SHIM_SHARED = {"shim_internal.h", "api_ids.h"}


def check_shim(shim):
    problems = []
    if not os.path.isdir(shim):
        return problems
    headers = {}                    # "folder/name.h" (or the shared name) -> included names, resolved
    sources = {}                    # "folder/name.c" -> included names, resolved
    private = {}                    # folder -> its own header names
    for dirpath, dirnames, filenames in os.walk(shim):
        dirnames.sort()
        rel = os.path.relpath(dirpath, shim).replace(os.sep, "/")
        if rel == ".":
            for name in sorted(filenames):
                if name.endswith(".c"):
                    problems.append(f"shim/{name}: a source file outside the shim's folders")
                elif name.endswith(".h") and name not in SHIM_SHARED:
                    problems.append(f"shim/{name}: a header at the top that check_layers.py does not know")
            continue
        if rel not in SHIM_FOLDERS:
            problems.append(f"shim/{rel}/: a folder check_layers.py does not know")
            dirnames[:] = []
            continue
        if not os.path.isfile(os.path.join(dirpath, "README.md")):
            problems.append(f"shim/{rel}/: no README.md")
        private[rel] = {n for n in filenames if n.endswith(".h")}
    for name in SHIM_SHARED:
        path = os.path.join(shim, name)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                incs = [i for i in INCLUDE.findall(f.read()) if not i.startswith("wslshim/")]
            for inc in incs:
                if inc not in SHIM_SHARED:
                    problems.append(f"shim/{name}: includes \"{inc}\" (the shared headers include no folder's)")
            headers[name] = [i for i in incs if i in SHIM_SHARED]
    extern = re.compile(r"^\s*extern\b", re.M)
    for folder in sorted(private):
        path = os.path.join(shim, folder)
        for name in sorted(os.listdir(path)):
            if not name.endswith((".c", ".h")):
                continue
            with open(os.path.join(path, name), encoding="utf-8") as f:
                text = f.read()
            resolved = []
            for inc in INCLUDE.findall(text):
                if inc.startswith("wslshim/"):
                    continue
                if folder == "launcher":
                    problems.append(f"shim/{folder}/{name}: includes \"{inc}\" (the launcher includes none of the shim's)")
                elif inc in SHIM_SHARED:
                    resolved.append(inc)
                elif inc in private[folder]:
                    resolved.append(f"{folder}/{inc}")
                else:
                    problems.append(f"shim/{folder}/{name}: includes \"{inc}\", neither shared nor its folder's own")
            if name.endswith(".h"):
                headers[f"{folder}/{name}"] = resolved
            else:
                sources[f"{folder}/{name}"] = resolved
                if folder != "launcher" and extern.search(text):
                    problems.append(f"shim/{folder}/{name}: declares something extern (a header declares "
                                    "what one file takes from another)")

    # Header cycles: a header that includes itself through others.
    state = {}

    def visit(node, stack):
        state[node] = 1
        for nxt in headers.get(node, []):
            if state.get(nxt) == 1:
                problems.append("shim header cycle: " + " -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for h in sorted(headers):
        if h not in state:
            visit(h, [h])
    own = ", ".join(sorted(f"{d}/{h}" for d in private for h in private[d])) or "none"
    print(f"shim/     {len(SHIM_FOLDERS)} folders, {len(sources)} source files: each includes only "
          f"{', '.join(sorted(SHIM_SHARED))} and its own folder's headers ({own}; the launcher none)")
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
