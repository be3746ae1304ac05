#!/usr/bin/python3
"""The encoder-decoder's training step, smallgrad against PyTorch, side by side.

    /usr/bin/python3 bench/compare_seq2seq_step.py [--threads 1,2] [--rounds R]
                                                   [--configs translate,d2l] [--build DIR]
                                                   [--openblas DIR] [--dropout P]

Runs build/release/bench/seq2seq_train_step and bench/torch_seq2seq_step.py
in alternation, R rounds, one process per (implementation, configuration,
thread count), PyTorch in the set-ups of bench/compare_train_step.py
(OpenBLAS, BLIS on its AVX-512 kernels, the system's BLIS as it comes; each
BLAS single-threaded, PyTorch's own thread count set). Prints every run,
then the median over rounds of each run's median step time and the ratio
against the fastest PyTorch set-up (the encoder's margin, in
docs/results.md, is the one to compare with).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

from compare_train_step import add_common_flags, find_openblas, interleaved_rounds, parse_common, peers, setups

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS = {"translate": 40, "d2l": 10}  # per run, after 3 warm-up steps
LINE = re.compile(r"^(\w+)\s+threads (\d+)\s+([\d.]+) ms/step.*peak RSS (\d+) MiB")


def run(cmd, env):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr}")
    for line in out.stdout.splitlines():
        m = LINE.match(line)
        if m:
            return {"ms": float(m[3]), "rss": int(m[4]), "line": line.strip()}
    sys.exit(f"no result line from {' '.join(cmd)}:\n{out.stdout}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_flags(p, "translate,d2l")
    a = p.parse_args()  # bad flags: usage and exit status 2
    threads, configs, sg_bin = parse_common(p, a, STEPS, "seq2seq_train_step")
    openblas = a.openblas or find_openblas(a.build)
    envs = peers(setups(openblas), "torch_seq2seq_step.py")
    print(f"encoder-decoder training step, float32, dropout {a.dropout}; {a.rounds} alternating rounds; "
          + ", ".join(f"{c} {STEPS[c]} steps" for c in configs) + " per run (after 3 warm-up steps)")
    print(f"OpenBLAS from {openblas}; load at start: {open('/proc/loadavg').read().split()[:3]}")
    results = interleaved_rounds(a, threads, configs, STEPS, sg_bin, {}, envs, run)

    med = lambda impl, c, t, key: statistics.median(x[key] for x in results[(impl, c, t)])  # noqa: E731
    print("\nmedian over rounds of each run's median ms/step; ratio = fastest PyTorch / smallgrad")
    print("| config | threads | smallgrad ms | " + " | ".join(f"{i} ms" for i in envs)
          + " | ratio | peak RSS MiB (smallgrad / PyTorch) |")
    print("|---|---|---|" + "---|" * len(envs) + "---|---|")
    for c in configs:
        for t in threads:
            ours = med("smallgrad", c, t, "ms")
            torch_ms = {i: med(i, c, t, "ms") for i in envs}
            best = min(torch_ms, key=torch_ms.get)
            print(f"| {c} | {t} | {ours:.2f} | " + " | ".join(f"{torch_ms[i]:.2f}" for i in envs)
                  + f" | {torch_ms[best] / ours:.2f} ({best}) | {med('smallgrad', c, t, 'rss'):.0f} / "
                  f"{min(med(i, c, t, 'rss') for i in envs):.0f} |")
    print(f"load at end: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
