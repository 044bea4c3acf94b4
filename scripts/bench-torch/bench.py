"""Times dpfil's engine against the best of its PyTorch peer's variants (torch_peer.py)
in one run, by CPU time, and prints for the four paths (mnist-cnn / cifar-cnn ×
per-sample clipped gradients / FIL step) the ratio torch CPU time ÷ dpfil CPU time
per sample (and by wall time), with the load average of every measurement.

Phase 1, the sweep: every torch variant of a path (gradients: vmap over chunks of
10, 25, 50, 100 and the whole batch, Opacus-style hooks, ghost and mixed ghost
clipping; FIL step: forward-over-reverse and reverse-over-reverse over swept
chunks), each with mkldnn on and off, timed once after a warm-up call, next to a
dpfil measurement of the same path. Phase 2, the rounds: dpfil and the sweep's
--finalists fastest variants of each path in alternating rounds; a round's ratio
takes the fastest finalist of that round. The reported ratio is the median over the
rounds; the sweep's table says which variant won each path. --use skips a path's
sweep and times the given variants; --dpfil-clip-algo auto times dpfil's mixed
ghost clipping on the gradient paths (same clipped sum) instead of the per-sample one;
--dpfil-conv-algo winograd|winograd4|auto runs dpfil's 3×3 stride-1 conv layers there as
Winograd F(2×2,3×3) or F(4×4,3×3) convolutions, or per layer the cheapest (same sum to
float32 rounding).

    /usr/bin/python3 scripts/bench-torch/bench.py [--rounds 3] [--seconds 3]

Run scripts/bench-torch/run.sh, which builds dpfilbench, checks every variant
against dpfil's outputs (check.sh) and sets the thread environment (torch 2
threads, OPENBLAS_NUM_THREADS=1, OMP_WAIT_POLICY=PASSIVE; dpfil 2 workers).
Benchmark tool only: no test or runtime code depends on torch.
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

# (model, path, batch, k, torch variants): the issue's settings. The FIL step runs on
# fewer samples per call than a training batch (the engine's per-sample cost does not
# depend on the batch beyond its chunks of ≤ 32 samples; torch's depends only on its
# own chunk, swept): mnist-cnn on 50 samples, cifar-cnn on 2 (torch's cifar-cnn FIL
# step takes 1–5 CPU-s per sample).
def grad_variants(batch):
    return [f"vmap:{c}" for c in (10, 25, 50, 100) if c < batch] + ["vmap:0", "hooks", "ghost", "mixed"]


PATHS = [
    ("mnist-cnn", "grad", 600, 0, grad_variants(600)),
    ("mnist-cnn", "fil", 50, 50, [f"{j}:{c}" for j in ("fwd", "rev") for c in (10, 25, 0)]),
    ("cifar-cnn", "grad", 200, 0, grad_variants(200)),
    ("cifar-cnn", "fil", 2, 50, [f"{j}:{c}" for j in ("fwd", "rev") for c in (1, 0)]),
]


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def dpfil(binary, model, path, batch, k, seconds, workers, clip_algo="per-sample", conv_algo="direct"):
    cmd = [binary, "time", "-model", model, "-path", path, "-batch", str(batch),
           "-coords", str(max(k, 1)), "-seconds", str(seconds), "-workers", str(workers)]
    if path == "grad":
        cmd += ["-clip-algo", clip_algo, "-conv-algo", conv_algo]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def per_sample(r):
    return r["wall_s"] / r["samples"], r["cpu_s"] / r["samples"]


def vname(v, mk, th):
    return f"{v}{'' if mk else ' mkldnn-off'}{'' if th == 2 else f' {th}-thread'}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dpfilbench", default="bin/dpfilbench")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3, help="seconds per measurement in the rounds")
    ap.add_argument("--sweep-seconds", type=float, default=0, help="seconds per sweep measurement (0: one call after the warm-up)")
    ap.add_argument("--finalists", type=int, default=2, help="fastest sweep variants per path timed in the rounds")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--paths", default="", help="comma-separated model:path subset, e.g. cifar-cnn:grad (default: all four)")
    ap.add_argument("--json", default="", help="also write every measurement to this JSON file")
    ap.add_argument("--dpfil-clip-algo", default="per-sample", choices=["per-sample", "ghost", "auto"],
                    help="dpfil's clipping algorithm on the gradient paths (the FIL step is per sample)")
    ap.add_argument("--dpfil-conv-algo", default="direct", choices=["direct", "winograd", "winograd4", "auto"],
                    help="dpfil's conv algorithm on the gradient paths (under --dpfil-clip-algo ghost/auto for the layers that form per-sample gradients; the FIL step is direct)")
    ap.add_argument("--use", action="append", default=[], metavar="MODEL:PATH=VARIANT/MKLDNN/THREADS",
                    help="time this torch variant in the rounds instead of sweeping the path, e.g. "
                         "cifar-cnn:grad=vmap:25/on/1 (repeatable)")
    args = ap.parse_args()
    paths = PATHS
    if args.paths:
        want = set(args.paths.split(","))
        paths = [p for p in PATHS if f"{p[0]}:{p[1]}" in want]
        if len(paths) != len(want):
            ap.error(f"--paths {args.paths!r}: known are " + ", ".join(f"{p[0]}:{p[1]}" for p in PATHS))
    threads = int(os.environ.get("TORCH_THREADS", "2"))
    torch.set_num_threads(threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; dpfil {args.workers} workers; "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')} "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}", flush=True)
    log = {"torch": torch.__version__, "sweep": [], "rounds": []}
    med = statistics.median

    # Phase 1: the sweep.
    finalists, sweep_best = {}, {}
    for u in args.use:
        key, _, spec = u.partition("=")
        parts = spec.split("/")
        if key.count(":") != 1 or len(parts) != 3 or parts[1] not in ("on", "off") or not parts[2].isdigit():
            ap.error(f"--use {u!r}: want MODEL:PATH=VARIANT/on|off/THREADS")
        m, p = key.split(":")
        finalists.setdefault((m, p), []).append((parts[0], parts[1] == "on", int(parts[2])))
    for model, path, batch, k, variants in paths:
        if (model, path) in finalists:
            v, mk, th = finalists[(model, path)][0]
            sweep_best[(model, path)] = (0.0, v, mk, th)
            print(f"no sweep for {model} {path}: --use " + ", ".join(vname(*f) for f in finalists[(model, path)]), flush=True)
            continue
        l0 = loadavg()
        d = dpfil(args.dpfilbench, model, path, batch, k, args.seconds, args.workers, args.dpfil_clip_algo, args.dpfil_conv_algo)
        dc = per_sample(d)[1]
        print(f"sweep {model} {path} batch {batch}{f' k {k}' if k else ''}: dpfil {dc * 1e3:.3f} CPU ms/sample "
              f"(load {l0:.2f})", flush=True)
        res = []

        def sweep(v, mk, th):
            torch.set_num_threads(th)
            l0 = loadavg()
            # FIL calls last seconds: their first call's set-up is noise, so the sweep
            # times them without a warm-up call.
            t = torch_peer.time_path(model, path, batch, k, args.sweep_seconds, v, mk, warmup=1 if path == "grad" else 0)
            torch.set_num_threads(threads)
            tw, tc = per_sample(t)
            res.append((tc, v, mk, th))
            log["sweep"].append({"model": model, "path": path, "variant": v, "mkldnn": mk, "threads": th, "load": l0,
                                 "cpu_s_per_sample": tc, "wall_s_per_sample": tw, "dpfil_cpu_s_per_sample": dc})
            print(f"  torch {vname(v, mk, th):31s} {tc * 1e3:9.3f} CPU ms/sample {tw * 1e3:9.3f} wall  "
                  f"÷ dpfil {tc / dc:5.2f}  (load {l0:.2f})", flush=True)
        for v in variants:
            for mk in (True, False):
                sweep(v, mk, threads)
        # Torch on one thread spends less CPU time in synchronisation: the fastest
        # two again on one thread.
        for _, v, mk, _ in sorted(res)[:2]:
            sweep(v, mk, 1)
        res.sort()
        finalists[(model, path)] = [(v, mk, th) for _, v, mk, th in res[:args.finalists]]
        sweep_best[(model, path)] = res[0]
        print(f"  fastest: " + ", ".join(f"{vname(v, mk, th)} {tc * 1e3:.3f}" for tc, v, mk, th in res[:args.finalists]), flush=True)

    # Phase 2: alternating rounds of dpfil and the finalists.
    ratios = {p[:2]: {"wall": [], "cpu": [], "won": [], "dpfil": [], "torch": []} for p in paths}
    loads = []
    for rnd in range(args.rounds):
        l0 = loadavg()
        for model, path, batch, k, _ in paths:
            d = dpfil(args.dpfilbench, model, path, batch, k, args.seconds, args.workers, args.dpfil_clip_algo, args.dpfil_conv_algo)
            dw, dc = per_sample(d)
            ts = []
            for v, mk, th in finalists[(model, path)]:
                torch.set_num_threads(th)
                t = torch_peer.time_path(model, path, batch, k, args.seconds, v, mk)
                torch.set_num_threads(threads)
                ts.append((per_sample(t)[1], per_sample(t)[0], v, mk, th))
            ts.sort()
            tc, tw, v, mk, th = ts[0]
            r = ratios[(model, path)]
            r["wall"].append(tw / dw)
            r["cpu"].append(tc / dc)
            r["won"].append(vname(v, mk, th))
            r["dpfil"].append(dc)
            r["torch"].append(tc)
            log["rounds"].append({"round": rnd + 1, "model": model, "path": path, "dpfil_cpu_s_per_sample": dc,
                                  "dpfil_wall_s_per_sample": dw, "load": loadavg(),
                                  "torch": [{"variant": v2, "mkldnn": m2, "threads": h2, "cpu_s_per_sample": c2,
                                             "wall_s_per_sample": w2} for c2, w2, v2, m2, h2 in ts]})
            extra = "  ".join(f"{vname(v2, m2, h2)}: {c2 * 1e3:.2f}" for c2, _, v2, m2, h2 in ts)
            print(f"round {rnd + 1} {model:9s} {path:4s}: dpfil {dc * 1e3:8.3f} CPU ms/sample ({dw * 1e3:.3f} wall); "
                  f"torch {extra} → ×{tc / dc:.2f} CPU ×{tw / dw:.2f} wall (load {loadavg():.2f})", flush=True)
        l1 = loadavg()
        loads.append((l0, l1))
        print(f"round {rnd + 1}: load average {l0:.2f} → {l1:.2f}", flush=True)
    lo = min(min(l) for l in loads)
    hi = max(max(l) for l in loads)
    print()
    print(f"medians over {args.rounds} rounds (load average {lo:.1f}–{hi:.1f}; dpfil's gradient paths: "
          f"--clip-algo {args.dpfil_clip_algo}, --conv-algo {args.dpfil_conv_algo}):")
    print("| path | best torch variant (sweep; rounds won) | torch CPU ms/sample | dpfil CPU ms/sample | "
          "dpfil speed-up by CPU (torch ÷ dpfil) | by wall |")
    print("|---|---|---|---|---|---|")
    for model, path, batch, k, _ in paths:
        r = ratios[(model, path)]
        what = f"FIL step, k = {k}"
        if path == "grad":
            what = ("per-sample clipped gradients" if args.dpfil_clip_algo == "per-sample"
                    else f"clipped gradient sum (dpfil --clip-algo {args.dpfil_clip_algo})")
            if args.dpfil_conv_algo != "direct":
                what += f" (dpfil --conv-algo {args.dpfil_conv_algo})"
        tc, v, mk, th = sweep_best[(model, path)]
        won = ", ".join(f"{w} {r['won'].count(w)}" for w in sorted(set(r["won"])))
        print(f"| {model} {what}, batch {batch} | {vname(v, mk, th)} ({won}) | {med(r['torch']) * 1e3:.2f} | "
              f"{med(r['dpfil']) * 1e3:.3f} | **{med(r['cpu']):.2f}×** | {med(r['wall']):.2f}× |")
    if args.json:
        log["summary"] = {f"{m}:{p}": {"cpu_ratio": med(ratios[(m, p)]["cpu"]), "wall_ratio": med(ratios[(m, p)]["wall"]),
                                       "rounds_won": ratios[(m, p)]["won"]} for m, p, *_ in paths}
        log["load"] = [lo, hi]
        with open(args.json, "w") as f:
            json.dump(log, f, indent=1)


if __name__ == "__main__":
    main()
