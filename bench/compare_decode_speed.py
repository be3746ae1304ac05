#!/usr/bin/python3
"""Decoding speed side by side: smallgrad's key/value cache, smallgrad's
d2l mode (recomputing the prefix), and d2l's PyTorch decoding loop.

    /usr/bin/python3 bench/compare_decode_speed.py [--threads 1,2] [--rounds R] [--reps N]
                                                   [--build DIR] [--openblas DIR]

Runs build/release/bench/decode_speed and bench/torch_decode_speed.py (in
bench/compare_train_step.py's PyTorch set-ups) in alternation, R rounds,
each run the median of --reps decodings per length after a warm-up. Prints
every run, then per length the median over rounds of target tokens per
second and the ratios: the cache against d2l's PyTorch loop (the fastest
set-up), and smallgrad's d2l mode against the same loop (the same
algorithm: what the framework alone gives).
"""
import argparse
import os
import statistics
import subprocess
import sys

from compare_train_step import find_openblas, setups

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rows(cmd, env, columns):
    """Runs cmd; returns {length: [tokens/s per column]} from its table rows."""
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr}")
    table = {}
    for line in out.stdout.splitlines():
        f = line.split()
        if len(f) >= 1 + columns and f[0].isdigit():
            table[int(f[0])] = [float(x) for x in f[1:1 + columns]]
    if not table:
        sys.exit(f"no rows from {' '.join(cmd)}:\n{out.stdout}")
    return table


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    p.add_argument("--openblas", help="folder holding OpenBLAS's libblas.so.3 (openblas-pthread)")
    a = p.parse_args()  # bad flags: usage and exit status 2
    try:
        threads = [int(t) for t in a.threads.split(",")]
    except ValueError:
        p.error(f"--threads: expected comma-separated integers, got {a.threads!r}")
    if a.rounds < 1 or a.reps < 1 or any(t < 1 for t in threads):
        p.error("--rounds, --reps and --threads must be at least 1")
    sg_bin = os.path.join(a.build, "bench", "decode_speed")
    if not os.access(sg_bin, os.X_OK):
        sys.exit(f"{sg_bin} not found; build first: scripts/setup.sh")
    envs = setups(a.openblas or find_openblas(a.build))
    print(f"decoding, 32 sources at once; {a.rounds} alternating rounds of medians of {a.reps} runs; "
          f"load at start: {open('/proc/loadavg').read().split()[:3]}")
    runs = {}  # (impl, threads) -> list of {length: [tokens/s...]}
    for r in range(1, a.rounds + 1):
        for t in threads:
            common = ["--threads", str(t), "--reps", str(a.reps)]
            res = rows([sg_bin, *common], dict(os.environ, OMP_NUM_THREADS=str(t)), 2)
            runs.setdefault(("smallgrad", t), []).append(res)
            print(f"round {r}  smallgrad {t} thread(s): " + ", ".join(
                f"{L}: {c:.0f} / {d:.0f}" for L, (c, d) in res.items()), flush=True)
            for name, env in envs.items():
                res = rows(["/usr/bin/python3", os.path.join(ROOT, "bench", "torch_decode_speed.py"), *common], env, 1)
                runs.setdefault((name, t), []).append(res)
                print(f"round {r}  PyTorch {name} {t} thread(s): " + ", ".join(
                    f"{L}: {v[0]:.0f}" for L, v in res.items()), flush=True)

    def med(impl, t, L, col):
        return statistics.median(run[L][col] for run in runs[(impl, t)])

    print("\nmedian over rounds, target tokens per second; ratios against the fastest PyTorch set-up")
    print("| threads | length | smallgrad cached | smallgrad d2l mode | " + " | ".join(f"PyTorch d2l loop ({n})" for n in envs)
          + " | cached / PyTorch | d2l mode / PyTorch | cached / d2l mode |")
    print("|---|---|---|---|" + "---|" * len(envs) + "---|---|---|")
    for t in threads:
        for L in sorted(runs[("smallgrad", t)][0]):
            cached, d2l = med("smallgrad", t, L, 0), med("smallgrad", t, L, 1)
            theirs = {n: med(n, t, L, 0) for n in envs}
            best = max(theirs, key=theirs.get)
            print(f"| {t} | {L} | {cached:,.0f} | {d2l:,.0f} | " + " | ".join(f"{theirs[n]:,.0f}" for n in envs)
                  + f" | {cached / theirs[best]:.1f}x ({best}) | {d2l / theirs[best]:.1f}x | {cached / d2l:.2f}x |")
    print(f"load at end: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
