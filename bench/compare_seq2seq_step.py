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

from compare_train_step import find_openblas, setups

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
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--configs", default="translate,d2l")
    p.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    p.add_argument("--openblas", help="folder holding OpenBLAS's libblas.so.3 (openblas-pthread)")
    p.add_argument("--dropout", type=float, default=0.1)
    a = p.parse_args()  # bad flags: usage and exit status 2
    try:
        threads = [int(t) for t in a.threads.split(",")]
    except ValueError:
        p.error(f"--threads: expected comma-separated integers, got {a.threads!r}")
    configs = a.configs.split(",")
    if any(c not in STEPS for c in configs) or a.rounds < 1 or any(t < 1 for t in threads):
        p.error(f"--configs from {','.join(STEPS)}, --rounds and --threads at least 1")
    sg_bin = os.path.join(a.build, "bench", "seq2seq_train_step")
    if not os.access(sg_bin, os.X_OK):
        sys.exit(f"{sg_bin} not found; build first: scripts/setup.sh")
    openblas = a.openblas or find_openblas(a.build)
    envs = setups(openblas)
    impls = ["smallgrad", *envs]
    print(f"encoder-decoder training step, float32, dropout {a.dropout}; {a.rounds} alternating rounds; "
          + ", ".join(f"{c} {STEPS[c]} steps" for c in configs) + " per run (after 3 warm-up steps)")
    print(f"OpenBLAS from {openblas}; load at start: {open('/proc/loadavg').read().split()[:3]}")
    results = {}
    for r in range(1, a.rounds + 1):
        for t in threads:
            for c in configs:
                common = ["--config", c, "--threads", str(t), "--steps", str(STEPS[c]), "--warmup", "3",
                          "--dropout", str(a.dropout)]
                for impl in impls:
                    if impl == "smallgrad":
                        res = run([sg_bin, *common], dict(os.environ, OMP_NUM_THREADS=str(t)))
                    else:
                        res = run(["/usr/bin/python3", os.path.join(ROOT, "bench", "torch_seq2seq_step.py"),
                                   *common], envs[impl])
                    results.setdefault((impl, c, t), []).append(res)
                    print(f"round {r}  {impl:<12} {res['line']}", flush=True)

    med = lambda impl, c, t, key: statistics.median(x[key] for x in results[(impl, c, t)])  # noqa: E731
    print("\nmedian over rounds of each run's median ms/step; ratio = fastest PyTorch / smallgrad")
    print("| config | threads | smallgrad ms | " + " | ".join(f"PyTorch {i} ms" for i in envs)
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
