#!/usr/bin/env python3
"""Tables GPU time per kernel from a profiler's CSV (scripts/gpu-profile.sh).

    gpu-kernels.py CSV TOOL MODEL     # TOOL: nsys (cuda_gpu_kern_sum report) or ncu (--csv)

CSV may be gzip-compressed (.gz). Prints a Markdown section: each kernel's calls,
total milliseconds and share, the 30 largest first. make gpu-check-dry runs it on the
H200 CSVs in docs/evidence/gpu-h200-2026-11-26-s11 and compares with kernels.txt there.
"""
import collections
import csv
import gzip
import sys

# ncu writes a duration's unit as ns/us/ms/s (older versions: nsecond/usecond/...).
SCALE = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6,
         "ms": 1e-3, "msecond": 1e-3, "s": 1.0, "second": 1.0}


def table(lines, tool, model):
    # ncu's CSV shares stdout with the profiled command's own output (bench --json):
    # keep only its quoted rows; nsys's report file holds the CSV alone.
    if tool == "ncu":
        keep = [l for l in lines if l.startswith('"')]
    else:
        keep = [l for l in lines if l.strip() and not l.startswith("==")]
    rows = list(csv.reader(keep))
    if not rows:
        raise ValueError("no CSV rows")
    head, body = rows[0], rows[1:]
    tot = collections.defaultdict(lambda: [0.0, 0])
    if tool == "nsys":  # Time (%), Total Time (ns), Instances, Avg, Med, Min, Max, StdDev, Name
        it, ii, iname = head.index("Total Time (ns)"), head.index("Instances"), head.index("Name")
        for r in body:
            tot[r[iname]][0] += float(r[it]) * 1e-9
            tot[r[iname]][1] += int(r[ii])
    elif tool == "ncu":  # one row per kernel launch and metric
        iname, im = head.index("Kernel Name"), head.index("Metric Name")
        iv, iu = head.index("Metric Value"), head.index("Metric Unit")
        for r in body:
            if r[im] != "gpu__time_duration.sum":
                continue
            if r[iu] not in SCALE:
                raise ValueError(f"unknown duration unit {r[iu]!r}")
            tot[r[iname]][0] += float(r[iv].replace(",", "")) * SCALE[r[iu]]
            tot[r[iname]][1] += 1
    else:
        raise ValueError(f"unknown tool {tool!r} (nsys or ncu)")
    if not tot:
        raise ValueError("no kernel durations in the CSV")
    all_s = sum(v[0] for v in tot.values())
    what = ("all calls of the run (gradient and FIL paths, warm-up included)" if tool == "nsys" else
            "launches 201-600 of the run, each replayed alone by ncu with caches flushed")
    out = [f"## {model} ({tool}): GPU time per kernel, {what}\n",
           "| kernel | calls | total ms | share |\n|---|---|---|---|"]
    for name, (s, n) in sorted(tot.items(), key=lambda kv: -kv[1][0])[:30]:
        out.append(f"| {name[:90].replace('|', '¦')} | {n} | {1e3 * s:.2f} | {100 * s / all_s:.1f} % |")
    out.append(f"\n{len(tot)} kernels, {1e3 * all_s:.1f} ms of GPU time in all\n")
    return "\n".join(out)


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    path, tool, model = argv
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt") as f:
            print(table(f.readlines(), tool, model))
    except (OSError, ValueError) as e:
        print(f"gpu-kernels.py: {path}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
