#!/usr/bin/env python3
"""Cross-check opbench against JAX (optional tooling, never in opbench's core path).

  check  (a) opbench's reference outputs against the JAX functions of workloads.py, on the inputs
             `opbench dump` writes (the workload's own generators and seed), within its tolerance.
  time   (b) XLA:CPU (jax.jit, median of --reps calls after warm-up) at opbench's cpu size, beside
             the median of opbench's baseline from `opbench eval ID --impl baseline`, as a table.

Run from the repository root after building opbench (see tools/jax/README.md):
  python3 tools/jax/crosscheck.py check --workloads 8p_GEMM,41k_Gemm_Add_ReLU
  python3 tools/jax/crosscheck.py time --workloads all --max-time 3
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from workloads import WORKLOADS, missing  # noqa: E402


def suite_ids(root):
    folder = os.path.join(root, "workloads")
    ids = [d for d in os.listdir(folder) if os.path.isfile(os.path.join(folder, d, "workload.toml"))]
    return sorted(ids, key=lambda d: (int("".join(c for c in d.split("_")[0] if c.isdigit())), d))


def select(arg, ids):
    if arg == "all":
        return ids
    chosen = []
    for part in arg.split(","):
        hits = [i for i in ids if i == part or i.startswith(part + "_") or i.startswith(part)]
        if not hits:
            sys.exit(f"no workload matches '{part}'")
        chosen.append(hits[0])
    return chosen


def dump(opbench, workload, size, impl, out_dir, seed):
    cmd = [opbench, "dump", workload, "--size", size, "--impl", impl, "--seed", str(seed), "--out", out_dir]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{run.stdout}{run.stderr}")
    with open(os.path.join(out_dir, "manifest.json")) as f:
        manifest = json.load(f)
    inputs = [np.load(os.path.join(out_dir, t["file"])) for t in manifest["inputs"]]
    outputs = [np.load(os.path.join(out_dir, t["file"])) for t in manifest["outputs"]]
    return manifest, inputs, outputs


def check(args, ids):
    failures = 0
    print(f"{'workload':52} {'output':8} {'max abs err':>12} {'max rel err':>12} {'atol':>8} {'rtol':>8}  verdict")
    for w in ids:
        if w not in WORKLOADS:
            print(f"{w:52} {'-':8} {'':>12} {'':>12} {'':>8} {'':>8}  no JAX function yet")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            manifest, inputs, expected = dump(args.opbench, w, args.size, "reference", tmp, args.seed)
        got = jax.jit(WORKLOADS[w])(*[jnp.asarray(x) for x in inputs])
        atol, rtol = manifest["tolerance"]["atol"], manifest["tolerance"]["rtol"]
        for spec, g, e in zip(manifest["outputs"], got, expected):
            g = np.asarray(g, dtype=np.float64).reshape(e.shape)
            e = e.astype(np.float64)
            diff = np.abs(g - e)
            ok = bool(np.all(diff <= atol + rtol * np.abs(e))) and g.shape == e.shape
            rel = float(np.max(diff / np.maximum(np.abs(e), 1e-30))) if diff.size else 0.0
            failures += not ok
            print(f"{w:52} {spec['name']:8} {float(diff.max()) if diff.size else 0:12.3g} {rel:12.3g} {atol:8g} {rtol:8g}  {'agrees' if ok else 'DIFFERS'}")
    left = missing(ids)
    if left:
        print(f"\n{len(left)} of {len(ids)} selected workloads have no JAX function yet: {', '.join(left)}")
    return 1 if failures else 0


def time_jax(fn, inputs, reps):
    f = jax.jit(fn)
    args = [jax.device_put(jnp.asarray(x)) for x in inputs]
    jax.block_until_ready(f(*args))  # compile and warm up
    jax.block_until_ready(f(*args))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(f(*args))
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3


def results_by_workload(path):
    """The baseline entries of an `opbench run` folder's results.json (or the file itself)."""
    if os.path.isdir(path):
        path = os.path.join(path, "results.json")
    with open(path) as f:
        doc = json.load(f)
    return {r["workload"]: r for r in doc["results"] if r.get("impl", {}).get("kind") == "baseline"}


def opbench_baseline_ms(args, w):
    if args.results:
        r = args.results_by_workload.get(w)
        if not r:
            return None, ""
        return (r.get("timing") or {}).get("median_ms"), r.get("isa", "")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "r.json")
        cmd = [args.opbench, "eval", w, "--impl", "baseline", "--size", args.size, "--max-time", str(args.max_time), "--json", path]
        if args.isa:
            cmd += ["--isa", args.isa]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if not os.path.exists(path):
            raise RuntimeError(f"{' '.join(cmd)} wrote no result:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
        with open(path) as f:
            r = json.load(f)
    timing = r.get("timing") or {}
    return (timing.get("baseline") or {}).get("median_ms"), r.get("isa", "")


def time_table(args, ids):
    rows = []
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"size {args.size}, load average {' '.join(load)} (over ~0.2 per core the figures are under load)")
    print(f"{'workload':52} {'XLA:CPU ms':>11} {'opbench baseline ms':>20} {'XLA / opbench':>14}  isa")
    for w in ids:
        if w not in WORKLOADS:
            print(f"{w:52} {'-':>11} {'-':>20} {'-':>14}  no JAX function yet")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            _, inputs, _ = dump(args.opbench, w, args.size, "baseline", tmp, args.seed)
        xla = time_jax(WORKLOADS[w], inputs, args.reps)
        base, isa = opbench_baseline_ms(args, w)
        ratio = xla / base if base else float("nan")
        rows.append((w, xla, base, ratio))
        print(f"{w:52} {xla:11.2f} {base if base else float('nan'):20.2f} {ratio:14.2f}  {isa}")
    slower = [r for r in rows if r[3] == r[3] and r[3] < 0.9]
    print(f"\nXLA / opbench below 1: XLA:CPU is faster than opbench's baseline. {len(slower)} of {len(rows)} rows below 0.9.")
    return 0


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["check", "time"])
    p.add_argument("--workloads", default="all", help="comma-separated ids or prefixes (default: all)")
    p.add_argument("--size", default=None, help="size class (check: test, time: cpu)")
    p.add_argument("--opbench", default=os.path.join(root, "build", "opbench"))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--reps", type=int, default=12, help="time: timed XLA calls (median)")
    p.add_argument("--max-time", type=float, default=5, help="time: opbench's timing cap per workload, seconds")
    p.add_argument("--isa", default="", help="time: opbench's --isa (default: its own default)")
    p.add_argument("--results", default="", help="time: take opbench's baseline medians from this run (its folder or results.json) "
                   "instead of evaluating each baseline again")
    args = p.parse_args()
    args.size = args.size or ("test" if args.mode == "check" else "cpu")
    args.results_by_workload = results_by_workload(args.results) if args.results else {}
    ids = select(args.workloads, suite_ids(root))
    sys.exit(check(args, ids) if args.mode == "check" else time_table(args, ids))


if __name__ == "__main__":
    main()
