#!/usr/bin/env python3
"""Tables of a device check (scripts/device-check): each cuda baseline beside XLA's time on an H200,
the experts beside their baselines and targets, and the status and cross-check lines.

    python3 tools/device/summarize.py OUT_DIR tools/device/xla_h200_ms.tsv
"""
import json
import os
import sys

# The experts' targets on an H200 (issue 16), in ms.
EXPERT_TARGETS = {"8p_GEMM": 5.43 / 0.9, "1p_Flash_Attention": 2.4, "2p_GQA_Attention": 5.0, "11p_Megablox_GMM": 0.8}


def load_results(path):
    try:
        with open(path) as f:
            return {r["workload"]: r for r in json.load(f)["results"]}
    except (OSError, ValueError, KeyError):
        return {}


def median_ms(r):
    return (r.get("timing") or {}).get("median_ms")


def main():
    out, xla_path = sys.argv[1], sys.argv[2]
    xla = {}
    for line in open(xla_path):
        if line.startswith("#") or not line.strip():
            continue
        name, med, _ = line.rstrip("\n").split("\t")
        xla[name] = float(med)
    base = load_results(os.path.join(out, "run-baseline", "results.json"))
    print("## cuda baselines at the full size vs XLA on an H200\n")
    print("| workload | status | baseline ms | XLA ms | baseline / XLA | within 1.25x | SM MHz (median) |")
    print("|---|---|---:|---:|---:|---|---:|")
    within = timed = 0
    extra = {"1p_cudnn_causal_mha", "2p_cudnn_causal_gqa", "8p_cublas"}
    for name in sorted((n for n in xla if n not in extra), key=lambda n: int("".join(c for c in n.split("_")[0] if c.isdigit()))):
        r = base.get(name)
        if not r:
            print(f"| {name} | not run | | {xla[name]:.3f} | | | |")
            continue
        ms = median_ms(r)
        clock = (r.get("device") or {}).get("sm_clock_median_mhz") or ""
        if ms:
            timed += 1
            ok = ms <= 1.25 * xla[name]
            within += ok
            print(f"| {name} | {r['status']} | {ms:.3f} | {xla[name]:.3f} | {ms / xla[name]:.2f} | {'yes' if ok else 'NO'} | {clock} |")
        else:
            print(f"| {name} | {r['status']} | | {xla[name]:.3f} | | | | ")
    print(f"\n{within} of {timed} timed baselines within 1.25x of XLA.\n")
    experts = load_results(os.path.join(out, "run-expert", "results.json"))
    if experts:
        print("## experts at the full size\n")
        print("| workload | status | expert ms | baseline ms | speedup [95% CI] | target ms | met |")
        print("|---|---|---:|---:|---|---:|---|")
        for name, r in sorted(experts.items()):
            ms = median_ms(r)
            t = r.get("timing") or {}
            b = (t.get("baseline") or {}).get("median_ms")
            s = r.get("speedup") or {}
            target = EXPERT_TARGETS.get(name)
            met = "" if not (ms and target) else ("yes" if ms <= target else "NO")
            ci = f"{s.get('vs_baseline', 0):.2f} [{s.get('ci95_low', 0):.2f}, {s.get('ci95_high', 0):.2f}]" if s else ""
            print(f"| {name} | {r['status']} | {ms or 0:.3f} | {b or 0:.3f} | {ci} | {target or 0:.2f} | {met} |")
    for part in ("calibrate.txt", "statuses.txt", "crosscheck.txt"):
        path = os.path.join(out, part)
        if os.path.exists(path):
            print(f"\n## {part}\n\n```\n{open(path).read()[-6000:]}\n```")


if __name__ == "__main__":
    main()
