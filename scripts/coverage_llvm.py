#!/usr/bin/env python3
"""Kernel branch coverage from `llvm-cov export` JSON (scripts/coverage.sh,
COV_TOOL=llvm; docs/SIMULATION.md, "Kernel branch coverage").

Each branch region clang's coverage mapping records -- a condition of the
source: an `if`, a loop test, each operand of `&&` / `||`, a `?:`, a case
label -- counts once, with its two outcomes (true taken, false taken),
whatever the number of template instantiations or inlined copies that share
it. Branches inside a macro (KAIROS_RETURN_IF_ERROR's error test, say)
count at the line that invokes the macro. The scope and the KAIROS_CHECK
exclusion are those of the gcov report: the transaction bodies
(job_store_*.cc but job_store_planted_bugs.cc, run_lifecycle.cc), the
scheduler node and the worker; a check's failure outcome is a bug, never
taken by a correct kernel.

usage: coverage_llvm.py EXPORT.json [TOP] [LINES]
"""
import json
import os
import re
import sys


def check_lines(path):
    """The lines of KAIROS_CHECK statements (from the line naming the macro
    through the one ending the statement), 1-based."""
    out = set()
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read().splitlines()
    except OSError:
        return out
    open_stmt = False
    for i, line in enumerate(text, 1):
        ends = re.search(r";[ \t]*(//.*)?$", line) is not None
        if "KAIROS_CHECK" in line:
            out.add(i)
            open_stmt = not ends
        elif open_stmt:
            out.add(i)
            if ends:
                open_stmt = False
    return out


def scoped(name):
    return (name.startswith("job_store_") and name != "job_store_planted_bugs.cc") or name in (
        "run_lifecycle.cc", "scheduler_node.cc", "worker.cc")


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[-1])
        return 2
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    lines = len(sys.argv) > 3 and sys.argv[3] not in ("", "0")
    with open(sys.argv[1], encoding="utf-8") as f:
        data = json.load(f)
    per_file = {}  # name -> {key: [line, true_count, false_count]}
    for fobj in data["data"][0]["files"]:
        path = fobj["filename"]
        if not re.search(r"core/kernel/[^/]+\.cc$", path):
            continue
        name = os.path.basename(path)
        regions = per_file.setdefault(name, {"path": path, "r": {}})["r"]

        def add(key, line, t, fc):
            r = regions.setdefault(key, [line, 0, 0])
            r[1] += t
            r[2] += fc

        for b in fobj.get("branches", []):
            add(("src", b[0], b[1], b[2], b[3]), b[0], b[4], b[5])
        for e in fobj.get("expansions", []):
            sr = e["source_region"]
            if sr[5] != 0:  # a macro inside a macro: counted with its outer one
                continue
            for b in e.get("branches", []):
                add(("macro", sr[0], sr[1], b[6], b[0], b[1], b[2], b[3]), sr[0], b[4], b[5])
    if not per_file:
        print("coverage: no kernel branches in the export")
        return 1

    totals = {k: [0, 0] for k in ("all", "all-nochk", "scope", "scope-nochk")}
    rows = []
    missing = {}  # (file, line) -> untaken outcomes, scope outside checks
    for name in sorted(per_file):
        checks = check_lines(per_file[name]["path"])
        ft = [0, 0]
        for line, t, fc in per_file[name]["r"].values():
            taken = (t > 0) + (fc > 0)
            in_check = line in checks
            for k, use in (("all", True), ("all-nochk", not in_check), ("scope", scoped(name)),
                           ("scope-nochk", scoped(name) and not in_check)):
                if use:
                    totals[k][0] += taken
                    totals[k][1] += 2
            ft[0] += taken
            ft[1] += 2
            if scoped(name) and not in_check and taken < 2:
                missing[(name, line)] = missing.get((name, line), 0) + 2 - taken
        rows.append((name, ft))

    def pct(a, b):
        return 100.0 * a / b if b else 0.0

    a = totals
    print("kernel branch coverage (llvm-cov, source branches, two outcomes each): "
          f"{a['all'][0]} of {a['all'][1]} outcomes taken ({pct(*a['all']):.1f}%)")
    print(f"  without KAIROS_CHECK lines: {a['all-nochk'][0]} of {a['all-nochk'][1]} "
          f"({pct(*a['all-nochk']):.1f}%)")
    print("scope (job_store_*.cc but planted bugs, run_lifecycle.cc, scheduler_node.cc, "
          f"worker.cc): {a['scope'][0]} of {a['scope'][1]} ({pct(*a['scope']):.1f}%)")
    print(f"  without KAIROS_CHECK lines: {a['scope-nochk'][0]} of {a['scope-nochk'][1]} "
          f"({pct(*a['scope-nochk']):.1f}%)")
    print("per file (taken/total outcomes):")
    for name, (t, n) in rows:
        print(f"  {name:<28} {t:5d}/{n:<5d} {pct(t, n):5.1f}%")
    print("lines of the scope with the most untaken outcomes, outside KAIROS_CHECK lines:")
    worst = sorted(missing.items(), key=lambda kv: (-kv[1], kv[0]))
    for (name, line), n in worst[:top]:
        print(f"  {n:4d}  {name}:{line}")
    if lines:
        print("untaken outcomes of the scope outside KAIROS_CHECK lines, by line (count):")
        for (name, line), n in sorted(missing.items()):
            print(f"  {name}:{line} {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
