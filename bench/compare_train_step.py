#!/usr/bin/python3
"""The encoder's training step, smallgrad against PyTorch, side by side.

    /usr/bin/python3 bench/compare_train_step.py [--threads 1,2] [--rounds R] [--configs tiny,medium,large]
                                                 [--build DIR] [--openblas DIR] [--dropout P]
                                                 [--target native|avx2|sse42]

Runs build/release/bench/train_step and bench/torch_train_step.py in
alternation, R rounds, one process per (implementation, configuration,
thread count) so that each peak resident memory is that configuration's own.
PyTorch runs in three set-ups, each with its BLAS single-threaded and
PyTorch's own thread count set (letting both thread oversubscribes 2 cores):

  openblas    OpenBLAS (libopenblas0-pthread) through LD_LIBRARY_PATH,
              OPENBLAS_NUM_THREADS=1, OPENBLAS_CORETYPE unset (this
              environment sets it to Haswell, which halves OpenBLAS's speed)
  blis-avx512 the system's libblas.so.3 (BLIS) forced onto its AVX-512
              kernels: BLIS_ARCH_TYPE=0, BLIS_NUM_THREADS=1
  system      the system's libblas.so.3 as it comes (BLIS picks its generic
              kernels on this machine)

--target avx2 or sse42 compares on a narrower vector width, as on a
student's CPU without AVX-512 (build smallgrad with the preset of that name
and pass --build build/avx2 or build/sse42). Every BLAS then runs its
kernels for that width, and PyTorch its own elementwise kernels:

  avx2   smallgrad with BLIS_ARCH_TYPE=3 (haswell); PyTorch with
         ATEN_CPU_CAPABILITY=avx2 over OpenBLAS with OPENBLAS_CORETYPE=Haswell
         (openblas-haswell) and over BLIS's haswell kernels (blis-haswell)
  sse42  smallgrad with BLIS_ARCH_TYPE=5 (penryn, SSE); PyTorch with
         ATEN_CPU_CAPABILITY=default (its kernels built for baseline x86-64,
         SSE2) over OpenBLAS with OPENBLAS_CORETYPE=Nehalem (openblas-nehalem,
         SSE kernels) and over BLIS's penryn kernels (blis-penryn)

and the target is tiny >= 2x the fastest PyTorch (the others are reported).

If no OpenBLAS folder is given or installed, it is unpacked once into
build/openblas with `apt-get download` and `dpkg -x` (nothing is installed).

Prints every run, then the median over rounds of each run's median step time,
the ratio against the fastest PyTorch set-up per configuration and thread
count, and whether each target of the performance issue is met:
tiny >= 3x, medium >= 1.5x, large >= 1.2x the fastest PyTorch, large at
>= 60% of the sgemm peak measured in the same runs, 2 threads >= 1.6x one
thread on large, and the tiny run's peak RSS <= 1/4 of PyTorch's.
"""
import argparse
import glob
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS = {"tiny": 100, "medium": 30, "large": 10}  # per run, after 3 warm-up steps
TARGET_RATIO = {"tiny": 3.0, "medium": 1.5, "large": 1.2}
LINE = re.compile(r"^(\w+)\s+threads (\d+)\s+([\d.]+) ms/step.*?([\d.]+) GFLOP/s(?:\s+MFU\s+([\d.]+)% of (\d+))?"
                  r".*peak RSS (\d+) MiB")


def find_openblas(build):
    for d in ["/usr/lib/x86_64-linux-gnu/openblas-pthread",
              os.path.join(build, "..", "openblas", "usr/lib/x86_64-linux-gnu/openblas-pthread")]:
        if os.path.exists(os.path.join(d, "libblas.so.3")):
            return os.path.abspath(d)
    dest = os.path.abspath(os.path.join(build, "..", "openblas"))
    print(f"OpenBLAS not found; unpacking libopenblas0-pthread into {dest}", flush=True)
    os.makedirs(dest, exist_ok=True)
    subprocess.run(["apt-get", "download", "libopenblas0-pthread"], cwd=dest, check=True,
                   stdout=subprocess.DEVNULL)
    for deb in glob.glob(os.path.join(dest, "libopenblas0-pthread_*.deb")):
        subprocess.run(["dpkg", "-x", deb, dest], check=True)
    d = os.path.join(dest, "usr/lib/x86_64-linux-gnu/openblas-pthread")
    if not os.path.exists(os.path.join(d, "libblas.so.3")):
        sys.exit(f"could not unpack OpenBLAS into {dest}; pass --openblas DIR")
    return d


# Per --target: the environment of smallgrad's runs, and PyTorch's set-ups.
NARROW = {
    "avx2": {"smallgrad": {"BLIS_ARCH_TYPE": "3"},
             "openblas-haswell": {"OPENBLAS_CORETYPE": "Haswell", "ATEN_CPU_CAPABILITY": "avx2"},
             "blis-haswell": {"BLIS_ARCH_TYPE": "3", "ATEN_CPU_CAPABILITY": "avx2"}},
    "sse42": {"smallgrad": {"BLIS_ARCH_TYPE": "5"},
              "openblas-nehalem": {"OPENBLAS_CORETYPE": "Nehalem", "ATEN_CPU_CAPABILITY": "default"},
              "blis-penryn": {"BLIS_ARCH_TYPE": "5", "ATEN_CPU_CAPABILITY": "default"}},
}


def setups(openblas, target="native"):
    base = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "LD_LIBRARY_PATH")}
    if target in NARROW:
        out = {}
        for name, extra in NARROW[target].items():
            if name == "smallgrad":
                continue
            env = dict(base, **extra)
            if name.startswith("openblas"):
                env.update(LD_LIBRARY_PATH=openblas, OPENBLAS_NUM_THREADS="1")
            else:
                env.update(BLIS_NUM_THREADS="1")
            out[name] = env
        return out
    return {
        "openblas": dict(base, LD_LIBRARY_PATH=openblas, OPENBLAS_NUM_THREADS="1"),
        "blis-avx512": dict(base, BLIS_ARCH_TYPE="0", BLIS_NUM_THREADS="1"),
        "system": dict(base),
    }


def run(cmd, env):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr}")
    for line in out.stdout.splitlines():
        m = LINE.match(line)
        if m:
            return {"ms": float(m[3]), "gflops": float(m[4]), "mfu": float(m[5]) if m[5] else None,
                    "peak": float(m[6]) if m[6] else None, "rss": int(m[7]), "line": line.strip()}
    sys.exit(f"no result line from {' '.join(cmd)}:\n{out.stdout}")


def add_common_flags(p, configs):
    """The flags both training-step comparisons take (this one and compare_seq2seq_step.py)."""
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--configs", default=configs)
    p.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    p.add_argument("--openblas", help="folder holding OpenBLAS's libblas.so.3 (openblas-pthread)")
    p.add_argument("--dropout", type=float, default=0.1)


def parse_common(p, a, steps, program):
    """(thread counts, configurations, smallgrad's benchmark) from add_common_flags' flags; a bad value
    is a usage error (exit status 2), a missing build a one-line exit."""
    try:
        threads = [int(t) for t in a.threads.split(",")]
    except ValueError:
        p.error(f"--threads: expected comma-separated integers, got {a.threads!r}")
    configs = a.configs.split(",")
    if any(c not in steps for c in configs) or a.rounds < 1 or any(t < 1 for t in threads):
        p.error(f"--configs from {','.join(steps)}, --rounds and --threads at least 1")
    sg_bin = os.path.join(a.build, "bench", program)
    if not os.access(sg_bin, os.X_OK):
        sys.exit(f"{sg_bin} not found; build first: scripts/setup.sh")
    return threads, configs, sg_bin


def interleaved_rounds(a, threads, configs, steps, sg_bin, sg_env, torch_script, envs, run_one):
    """{(implementation, config, threads): [run, ...]}: a.rounds rounds, each running smallgrad and then
    every PyTorch set-up of envs on every configuration and thread count, one process each, printed as
    they come (run_one(cmd, env) reads a run's result line)."""
    results = {}
    for r in range(1, a.rounds + 1):
        for t in threads:
            for c in configs:
                common = ["--config", c, "--threads", str(t), "--steps", str(steps[c]), "--warmup", "3",
                          "--dropout", str(a.dropout)]
                for impl in ["smallgrad", *envs]:
                    if impl == "smallgrad":
                        res = run_one([sg_bin, *common], dict(os.environ, OMP_NUM_THREADS=str(t), **sg_env))
                    else:
                        res = run_one(["/usr/bin/python3", os.path.join(ROOT, "bench", torch_script), *common],
                                      envs[impl])
                    results.setdefault((impl, c, t), []).append(res)
                    print(f"round {r}  {impl:<12} {res['line']}", flush=True)
    return results


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_flags(p, "tiny,medium,large")
    p.add_argument("--target", default="native", choices=["native", *NARROW],
                   help="vector width of both sides (default: this machine's)")
    a = p.parse_args()  # bad flags: usage and exit status 2
    threads, configs, sg_bin = parse_common(p, a, STEPS, "train_step")
    openblas = a.openblas or find_openblas(a.build)
    envs = setups(openblas, a.target)
    sg_env = NARROW.get(a.target, {}).get("smallgrad", {})
    targets = TARGET_RATIO if a.target == "native" else {"tiny": 2.0}

    print(f"training step, float32, dropout {a.dropout}; {a.rounds} alternating rounds; steps per run "
          + ", ".join(f"{c} {STEPS[c]}" for c in configs) + " (after 3 warm-up steps)")
    print(f"target {a.target}: smallgrad from {a.build} with {sg_env or 'its own BLIS choice'}")
    print(f"OpenBLAS from {openblas}; load at start: {open('/proc/loadavg').read().split()[:3]}")
    results = interleaved_rounds(a, threads, configs, STEPS, sg_bin, sg_env, "torch_train_step.py", envs, run)

    med = lambda impl, c, t, key: statistics.median(x[key] for x in results[(impl, c, t)])  # noqa: E731
    print("\nmedian over rounds of each run's median ms/step; ratio = fastest PyTorch / smallgrad")
    print("| config | threads | smallgrad ms | " + " | ".join(f"PyTorch {i} ms" for i in envs)
          + " | ratio | target | MFU | peak RSS MiB (smallgrad / PyTorch) |")
    print("|---|---|---|" + "---|" * len(envs) + "---|---|---|---|")
    checks = []
    for c in configs:
        for t in threads:
            ours = med("smallgrad", c, t, "ms")
            torch_ms = {i: med(i, c, t, "ms") for i in envs}
            best = min(torch_ms, key=torch_ms.get)
            ratio = torch_ms[best] / ours
            mfu = med("smallgrad", c, t, "mfu")
            rss = med("smallgrad", c, t, "rss")
            torch_rss = min(med(i, c, t, "rss") for i in envs)
            print(f"| {c} | {t} | {ours:.2f} | " + " | ".join(f"{torch_ms[i]:.2f}" for i in envs)
                  + f" | {ratio:.2f} ({best}) | {targets.get(c, '-')} | {mfu:.1f}% | {rss:.0f} / {torch_rss:.0f} |")
            if c in targets:
                checks.append((f"{c}, {t} thread(s): {ratio:.2f}x the fastest PyTorch ({best})", ratio >= targets[c]))
            if a.target != "native":
                continue
            if c == "large":
                checks.append((f"large, {t} thread(s): {mfu:.1f}% of the sgemm peak "
                               f"({med('smallgrad', c, t, 'peak'):.0f} GFLOP/s)", mfu >= 60))
            if c == "tiny":
                checks.append((f"tiny, {t} thread(s): peak RSS {rss:.0f} MiB, PyTorch's {torch_rss:.0f} MiB "
                               f"(at most a quarter: {torch_rss / 4:.0f})", rss <= torch_rss / 4))
    if a.target == "native" and "large" in configs and 1 in threads and 2 in threads:
        speedup = med("smallgrad", "large", 1, "ms") / med("smallgrad", "large", 2, "ms")
        checks.append((f"large: 2 threads {speedup:.2f}x faster than 1", speedup >= 1.6))
    print("\ntargets:")
    for text, ok in checks:
        print(f"  {'met   ' if ok else 'MISSED'}  {text}")
    print(f"load at end: {open('/proc/loadavg').read().split()[:3]}")
    print("all targets met" if all(ok for _, ok in checks) else "some targets missed")


if __name__ == "__main__":
    main()
