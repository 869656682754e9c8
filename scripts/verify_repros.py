#!/usr/bin/env python3
"""Checks every minimized finding of a findings store on this host.

For each bucket with a minimized program: runs its repro.py and builds and
runs its repro_cpp/ (in parallel), and reads the reducer's numbers from the
campaign's logs/repro-<id>.log. Prints a table and a summary (median and
worst nodes and elements before/after, reducer time, how many repros
reproduce) and writes the same as JSON.

  python3 scripts/verify_repros.py FINDINGS [--work CAMPAIGN] [--jobs 16]
      [--json OUT.json] [--no-cpp] [--cpp-standalone] [--build DIR]

The C++ repros are compiled together in one CMake project (one configure, one
precompiled <ATen/ATen.h>, the flags of the emitted CMakeLists.txt);
--cpp-standalone builds each with its own CMakeLists.txt instead.

A repro exits 1 when the divergence (or the hang or crash) reproduces, 0
when it does not, 2 when the program fails.
"""
import argparse
import concurrent.futures as cf
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

DONE = re.compile(r"reduce: done: .*?; nodes (\d+) -> (\d+), elements (\d+) -> (\d+), "
                  r"bytes (\d+) -> (\d+), (\d+) tests, (\d+) rounds, ([\d.]+) s")


def run(cmd, cwd=None, timeout=300):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout, text=True)
        return p.returncode, p.stdout, time.time() - t0
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return 124, out, time.time() - t0


def torch_cmake():
    return subprocess.check_output(
        [sys.executable, "-c", "import torch; print(torch.utils.cmake_prefix_path)"],
        text=True).strip()


def check_py(folder):
    rc, out, dt = run([sys.executable, "repro.py"], cwd=folder, timeout=300)
    return {"py_rc": rc, "py_seconds": round(dt, 1), "py_tail": out[-400:]}


def check_cpp(folder, prefix):
    src = os.path.join(folder, "repro_cpp")
    build = os.path.join(src, "build")
    rc, out, dt = run(["cmake", "-S", src, "-B", build, "-DCMAKE_PREFIX_PATH=" + prefix],
                      timeout=600)
    if rc == 0:
        rc, out2, dt2 = run(["cmake", "--build", build], timeout=900)
        out += out2
        dt += dt2
    if rc != 0:
        return {"cpp_rc": "build failed", "cpp_build_seconds": round(dt, 1),
                "cpp_tail": out[-600:]}
    rc, out, _ = run([os.path.join(build, "repro")], cwd=src, timeout=300)
    return {"cpp_rc": rc, "cpp_build_seconds": round(dt, 1), "cpp_tail": out[-400:]}


def build_together(folders, prefix, build, jobs):
    """Builds every repro_cpp/main.cpp in one CMake project: one configure and
    one precompiled <ATen/ATen.h> instead of one each (with the same flags as
    the emitted CMakeLists.txt). Returns {folder: binary path or None}, log."""
    os.makedirs(build, exist_ok=True)
    src = os.path.join(build, "src")
    os.makedirs(src, exist_ok=True)
    lines = ["cmake_minimum_required(VERSION 3.18)", "project(divfuzz_repros CXX)",
             "set(CMAKE_CXX_STANDARD 17)", "set(CMAKE_CXX_STANDARD_REQUIRED ON)",
             "find_package(Torch REQUIRED)",
             'set(CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS} ${TORCH_CXX_FLAGS}")']
    names = {}
    for i, folder in enumerate(folders):
        name = "repro_%d" % i
        names[folder] = name
        main = os.path.abspath(os.path.join(folder, "repro_cpp", "main.cpp"))
        lines.append("add_executable(%s %s)" % (name, main))
        lines.append('target_link_libraries(%s PRIVATE "${TORCH_LIBRARIES}" ${CMAKE_DL_LIBS})' %
                     name)
        lines.append("target_precompile_headers(%s %s)" %
                     (name, "PRIVATE <ATen/ATen.h>" if i == 0 else "REUSE_FROM repro_0"))
    with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    bin_dir = os.path.join(build, "bin")
    ninja = shutil.which("ninja") is not None
    rc, out, dt = run(["cmake", "-S", src, "-B", bin_dir, "-DCMAKE_BUILD_TYPE=Release",
                       "-DCMAKE_PREFIX_PATH=" + prefix] + (["-G", "Ninja"] if ninja else []),
                      timeout=600)
    if rc == 0:
        # Keep going: one repro that does not compile must not hide the others.
        keep_going = ["-k", "0"] if ninja else ["-k"]
        rc, out2, dt2 = run(["cmake", "--build", bin_dir, "-j", str(jobs), "--"] + keep_going,
                            timeout=3600)
        out += out2
        dt += dt2
    binaries = {}
    for folder, name in names.items():
        path = os.path.join(bin_dir, name)
        binaries[folder] = path if os.path.exists(path) else None
    return binaries, out, dt


def run_binary(folder, binary):
    if binary is None:
        return {"cpp_rc": "build failed"}
    rc, out, _ = run([binary], cwd=os.path.join(folder, "repro_cpp"), timeout=300)
    return {"cpp_rc": rc, "cpp_tail": out[-400:]}


def reducer_numbers(findings, work, bucket_id):
    path = os.path.join(findings, bucket_id, "reduction.json")
    if os.path.exists(path):
        with open(path) as f:
            r = json.load(f)
        return {"nodes_before": r["nodes_before"], "nodes_after": r["nodes_after"],
                "elements_before": r["elements_before"], "elements_after": r["elements_after"],
                "tests": r["tests"], "reduce_seconds": r["seconds"]}
    # Older stores: the campaign's per-bucket log.
    log = os.path.join(work, "logs", "repro-%s.log" % bucket_id) if work else ""
    if not log or not os.path.exists(log):
        return {}
    m = None
    with open(log, errors="replace") as f:
        for line in f:
            m = DONE.search(line) or m
    if not m:
        return {}
    g = [float(x) for x in m.groups()]
    return {"nodes_before": int(g[0]), "nodes_after": int(g[1]), "elements_before": int(g[2]),
            "elements_after": int(g[3]), "tests": int(g[6]), "reduce_seconds": g[8]}


def describe(values):
    if not values:
        return "-"
    return "median %g, worst %g" % (statistics.median(values), max(values))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("findings")
    ap.add_argument("--work", default="", help="campaign work folder (for the reducer logs)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--json", default="")
    ap.add_argument("--no-cpp", action="store_true")
    ap.add_argument("--cpp-standalone", action="store_true",
                    help="build each repro_cpp/ with its own CMakeLists.txt (slower)")
    ap.add_argument("--build", default="", help="build folder for the C++ repros "
                    "(default FINDINGS/../verify_build)")
    args = ap.parse_args()
    index = os.path.join(args.findings, "index.jsonl")
    if not os.path.exists(index):
        sys.exit("verify_repros: %s not found" % index)
    entries = []
    with open(index) as f:
        for n, line in enumerate(f, 1):
            try:
                entries.append(json.loads(line))
            except ValueError:
                print("verify_repros: %s:%d: not JSON; skipped" % (index, n), file=sys.stderr)
    total = len(entries)
    todo = [e for e in entries if e.get("minimized")]
    print("verify_repros: %d buckets, %d minimized" %
          (total, len(todo)), flush=True)
    prefix = "" if args.no_cpp else torch_cmake()
    rows = {e["id"]: dict(id=e["id"], tier=e.get("tier"), cls=e.get("class"),
                          **reducer_numbers(args.findings, args.work, e["id"])) for e in todo}
    binaries = {}
    if not args.no_cpp and not args.cpp_standalone:
        folders = [os.path.join(args.findings, e["id"]) for e in todo]
        build = os.path.abspath(args.build or os.path.join(args.findings, "..", "verify_build"))
        binaries, log, seconds = build_together(folders, prefix, build, args.jobs)
        built = sum(b is not None for b in binaries.values())
        print("verify_repros: built %d of %d repro_cpp programs in one project in %.0f s" %
              (built, len(folders), seconds), flush=True)
        if built < len(folders):
            print(log[-3000:])
    with cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {}
        for e in todo:
            folder = os.path.join(args.findings, e["id"])
            futures[pool.submit(check_py, folder)] = e["id"]
            if args.no_cpp:
                continue
            if args.cpp_standalone:
                futures[pool.submit(check_cpp, folder, prefix)] = e["id"]
            else:
                futures[pool.submit(run_binary, folder, binaries[folder])] = e["id"]
        for done, fut in enumerate(cf.as_completed(futures), 1):
            rows[futures[fut]].update(fut.result())
            if done % 20 == 0:
                print("verify_repros: %d/%d checks done" % (done, len(futures)), flush=True)
    table = sorted(rows.values(), key=lambda r: r["id"])
    print("%-50s %-10s %5s %5s %9s %9s %6s %6s" % ("bucket", "tier", "n0", "n1", "el0", "el1",
                                                  "py", "cpp"))
    for r in table:
        print("%-50s %-10s %5s %5s %9s %9s %6s %6s" % (
            r["id"][:50], r.get("tier"), r.get("nodes_before", "?"), r.get("nodes_after", "?"),
            r.get("elements_before", "?"), r.get("elements_after", "?"), r.get("py_rc"),
            r.get("cpp_rc", "-")))
    def col(k):
        return [r[k] for r in table if isinstance(r.get(k), (int, float))]
    summary = {
        "buckets": total,
        "minimized": len(table),
        "py_reproduces": sum(r.get("py_rc") == 1 for r in table),
        "cpp_reproduces": sum(r.get("cpp_rc") == 1 for r in table),
        "cpp_build_failed": sum(r.get("cpp_rc") == "build failed" for r in table),
        "nodes_before": describe(col("nodes_before")),
        "nodes_after": describe(col("nodes_after")),
        "elements_before": describe(col("elements_before")),
        "elements_after": describe(col("elements_after")),
        "reduce_seconds": describe(col("reduce_seconds")),
    }
    print("\n== summary")
    for k, v in summary.items():
        print("  %-16s %s" % (k, v))
    for r in table:
        if r.get("py_rc") != 1 or (not args.no_cpp and r.get("cpp_rc") != 1):
            print("\n-- %s: py %s, cpp %s\n%s\n%s" % (r["id"], r.get("py_rc"), r.get("cpp_rc"),
                                                     r.get("py_tail", ""), r.get("cpp_tail", "")))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "buckets": table}, f, indent=1)


if __name__ == "__main__":
    main()
