"""Times dpfil's engine and its PyTorch peer (torch_peer.py) in alternating rounds in
one run and prints, for the four paths (mnist-cnn / cifar-cnn × per-sample clipped
gradients / FIL step), the speed ratio torch time ÷ dpfil time per sample by wall time
and by CPU time (medians over the rounds), the load average, and the mnist-cnn FIL
step's GFLOP rate beside the engine's own SGEMM (1024³, one product per thread),
measured in the same rounds.

    /usr/bin/python3 scripts/bench-torch/bench.py [--rounds 5] [--seconds 4]

Run scripts/bench-torch/run.sh, which builds dpfilbench and sets the thread
environment (torch 2 threads, OPENBLAS_NUM_THREADS=1, OMP_WAIT_POLICY=PASSIVE; dpfil
2 workers). Benchmark tool only: no test or runtime code depends on torch.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_peer  # noqa: E402

# (model, path, batch, k): the settings; the mnist FIL step on 120 samples
# per call (the engine's per-sample cost does not depend on the batch beyond its
# chunks of ≤ 32 samples), the cifar one on 2.
PATHS = [
    ("mnist-cnn", "grad", 600, 0),
    ("mnist-cnn", "fil", 120, 50),
    ("cifar-cnn", "grad", 200, 0),
    ("cifar-cnn", "fil", 2, 50),
]


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def dpfil(binary, model, path, batch, k, seconds, workers):
    cmd = [binary, "time", "-model", model, "-path", path, "-batch", str(batch),
           "-coords", str(max(k, 1)), "-seconds", str(seconds), "-workers", str(workers)]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def gemm(binary, seconds, threads):
    cmd = [binary, "gemm", "-seconds", str(seconds), "-threads", str(threads)]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def per_sample(r):
    return r["wall_s"] / r["samples"], r["cpu_s"] / r["samples"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dpfilbench", default="bin/dpfilbench")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=4, help="seconds per measurement")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--jvp", default="both", choices=["fwd", "rev", "both"],
                    help="torch FIL formulation(s); with both, the faster (by CPU) counts")
    ap.add_argument("--torch-chunk", type=int, default=30, help="torch FIL samples per vmap call")
    ap.add_argument("--paths", default="", help="comma-separated model:path subset, e.g. cifar-cnn:grad (default: all four)")
    args = ap.parse_args()
    paths = PATHS
    if args.paths:
        want = set(args.paths.split(","))
        paths = [p for p in PATHS if f"{p[0]}:{p[1]}" in want]
        if len(paths) != len(want):
            ap.error(f"--paths {args.paths!r}: known are " + ", ".join(f"{p[0]}:{p[1]}" for p in PATHS))
    torch.set_num_threads(int(os.environ.get("TORCH_THREADS", "2")))
    fl = json.loads(subprocess.run([args.dpfilbench, "flops", "-model", "mnist-cnn", "-coords", "50"],
                                   check=True, capture_output=True, text=True).stdout)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; dpfil {args.workers} workers; "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')} "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}")
    jvps = ["fwd", "rev"] if args.jvp == "both" else [args.jvp]
    ratios = {p[:2]: {"wall": [], "cpu": []} for p in paths}
    best_jvp = {}
    gemm_rates, fil_rates, loads = [], [], []
    for rnd in range(args.rounds):
        l0 = loadavg()
        g = gemm(args.dpfilbench, args.seconds / 2, args.workers)
        gemm_rates.append(g)
        for model, path, batch, k in paths:
            d = dpfil(args.dpfilbench, model, path, batch, k, args.seconds, args.workers)
            dw, dc = per_sample(d)
            if (model, path) == ("mnist-cnn", "fil"):
                fil_rates.append(d)
            ts = []
            for jk in (jvps if path == "fil" else ["-"]):
                t = torch_peer.time_path(model, path, batch, k, args.seconds, jk, args.torch_chunk)
                ts.append((per_sample(t)[1], jk, t))
            ts.sort(key=lambda v: v[0])
            _, jk, t = ts[0]
            if path == "fil":
                best_jvp.setdefault((model, path), []).append(jk)
            tw, tc = per_sample(t)
            ratios[(model, path)]["wall"].append(tw / dw)
            ratios[(model, path)]["cpu"].append(tc / dc)
            extra = "  ".join(f"{j}: {v * 1e3:.2f} CPU ms/sample" for v, j, _ in sorted(ts, key=lambda v: v[1])) if path == "fil" else ""
            print(f"round {rnd + 1} {model:9s} {path:4s}: dpfil {dw * 1e3:8.3f} ms wall {dc * 1e3:8.3f} ms CPU /sample; "
                  f"torch {tw * 1e3:8.3f} ms wall {tc * 1e3:8.3f} ms CPU /sample  → ×{tw / dw:.2f} wall ×{tc / dc:.2f} CPU  {extra}",
                  flush=True)
        l1 = loadavg()
        loads.append((l0, l1))
        print(f"round {rnd + 1}: sgemm 1024³ {g['gflop_per_s']:.1f} GFLOP/s wall, {g['gflop_per_cpu_s']:.1f} GFLOP/CPU-s; "
              f"load average {l0:.2f} → {l1:.2f}", flush=True)
    med = statistics.median
    print()
    print(f"medians over {args.rounds} rounds (load average {min(min(l) for l in loads):.1f}–{max(max(l) for l in loads):.1f}):")
    print("| path | dpfil speed-up (torch time ÷ dpfil time), wall | by CPU | torch FIL jvp |")
    print("|---|---|---|---|")
    for model, path, batch, k in paths:
        r = ratios[(model, path)]
        what = "per-sample clipped gradients" if path == "grad" else f"FIL step, k = {k}"
        jv = ",".join(sorted(set(best_jvp.get((model, path), [])))) or "–"
        print(f"| {model} {what}, batch {batch} | {med(r['wall']):.2f}× | **{med(r['cpu']):.2f}×** | {jv} |")
    if not fil_rates:
        return
    fil_flop = fl["fil_step"]
    fw = med([fil_flop * d["samples"] / d["wall_s"] / 1e9 for d in fil_rates])
    fc = med([fil_flop * d["samples"] / d["cpu_s"] / 1e9 for d in fil_rates])
    gw = med([g["gflop_per_s"] for g in gemm_rates])
    gc = med([g["gflop_per_cpu_s"] for g in gemm_rates])
    print()
    print(f"mnist-cnn FIL step ({fil_flop / 1e6:.1f} MFLOP/sample): {fw:.1f} GFLOP/s wall, {fc:.1f} GFLOP/CPU-s; "
          f"engine sgemm 1024³ ({args.workers} threads): {gw:.1f} GFLOP/s wall, {gc:.1f} GFLOP/CPU-s → "
          f"{100 * fw / gw:.0f} % by wall, {100 * fc / gc:.0f} % by CPU")


if __name__ == "__main__":
    main()
