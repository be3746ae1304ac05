#!/usr/bin/python3
"""The encoder's training step, smallgrad against PyTorch and libtorch, side by side.

    /usr/bin/python3 bench/compare_train_step.py [--threads 1,2] [--rounds R] [--configs tiny,medium,large]
                                                 [--build DIR] [--openblas DIR] [--dropout P]
                                                 [--target native|avx2|sse42] [--libtorch PATH|none]

Runs build/release/bench/train_step, bench/torch_train_step.py (PyTorch)
and build/libtorch/train_step (the same step in libtorch, PyTorch's C++ API:
bench/libtorch/train_step.cpp, so no Python between the ops) in alternation,
R rounds, one process per (implementation, configuration, thread count) so
that each peak resident memory is that configuration's own. The peers are
PyTorch and libtorch, each in three set-ups, each with its BLAS
single-threaded and the peer's own thread count set (letting both thread
oversubscribes 2 cores):

  openblas    OpenBLAS (libopenblas0-pthread) through LD_LIBRARY_PATH,
              OPENBLAS_NUM_THREADS=1, OPENBLAS_CORETYPE unset (this
              environment sets it to Haswell, which halves OpenBLAS's speed)
  blis-avx512 the system's libblas.so.3 (BLIS) forced onto its AVX-512
              kernels: BLIS_ARCH_TYPE=0, BLIS_NUM_THREADS=1; on a CPU
              without AVX-512 (a Zen 3) blis-zen3 instead, its AVX2
              kernels (BLIS_ARCH_TYPE=6), where skx's would not run
  system      the system's libblas.so.3 as it comes (BLIS picks its generic
              kernels on the Zen 5, its zen3 ones on a Zen 3)

--target avx2 or sse42 compares on a narrower vector width, as on a
student's CPU without AVX-512 (smallgrad from build/avx2 or build/sse42,
built with the preset of that name, unless --build says otherwise). Every
BLAS then runs its kernels for that width, and the peers their own
elementwise kernels:

  avx2   as on a Zen 3 (an AVX2 CPU, where native is avx2): smallgrad with
         BLIS_ARCH_TYPE=6 (zen3, what it picks there); the peers with
         ATEN_CPU_CAPABILITY=avx2 over OpenBLAS with OPENBLAS_CORETYPE=Zen
         (openblas-zen, what OpenBLAS picks there) and over BLIS's zen3
         kernels (blis-zen3)
  sse42  smallgrad with BLIS_ARCH_TYPE=5 (penryn, SSE); the peers with
         ATEN_CPU_CAPABILITY=default (their kernels built for baseline
         x86-64, SSE2) over OpenBLAS with OPENBLAS_CORETYPE=Nehalem
         (openblas-nehalem, SSE kernels) and over BLIS's penryn kernels
         (blis-penryn)

If no OpenBLAS folder is given or installed, it is unpacked once into
build/openblas with `apt-get download` and `dpkg -x` (nothing is installed).
libtorch's binary is --libtorch PATH, or build/libtorch/train_step, built
there first (`cmake -S bench/libtorch -B build/libtorch`, which needs
Debian's libtorch-dev) and brought up to date on every run; --libtorch none
leaves libtorch out.

Prints every run, then the median over rounds of each run's median step time,
the ratio against the fastest peer (PyTorch or libtorch, any set-up) per
configuration and thread count, and whether each target of the performance
issue is met. Native and avx2: on one thread tiny >= 3x, medium >= 2x,
large >= 1.5x the fastest peer, large at >= 70% of the sgemm peak measured
in the same runs; medium's data-parallel step on 2 threads >= 1.7x its
speed on one. sse42: tiny >= 2x the fastest peer on one thread. The 2-thread
rows and peak resident memory are reported, not targets. "ratio at the peak"
is the ratio smallgrad would reach if every FLOP of its step ran at the sgemm
peak of the same run and nothing else took time (ratio / MFU): where it is
below a target, no kernel work can meet that target against these peers on
this CPU.
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
# The performance issue's targets, on one thread: smallgrad's speed over the fastest peer's, per configuration,
# large's fraction of the sgemm peak, and medium's speed-up on 2 threads (data-parallel) over 1.
ONE_THREAD = {"tiny": 3.0, "medium": 2.0, "large": 1.5}
TARGETS = {"native": ONE_THREAD, "avx2": ONE_THREAD, "sse42": {"tiny": 2.0}}
TARGET_MFU = {"native": 70.0, "avx2": 70.0}
TARGET_SPEEDUP = {"native": 1.7, "avx2": 1.7}
LINE = re.compile(r"^(\w+)\s+threads (\d+)\s+([\d.]+) ms/step.*?([\d.]+) GFLOP/s(?:\s+MFU\s+([\d.]+)% of (\d+))?"
                  r".*peak RSS (\d+) MiB(?:.*step (\S+))?")


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


def find_libtorch(build, given):
    """(libtorch's train_step, where it came from): --libtorch PATH as given, or build/libtorch/train_step
    configured if need be and built up to date (bench/libtorch is a CMake project of its own); None for
    --libtorch none."""
    if given == "none":
        return None, "left out (--libtorch none)"
    if given:
        if not os.access(given, os.X_OK):
            sys.exit(f"--libtorch {given}: not an executable file")
        return os.path.abspath(given), "as given (--libtorch)"
    dest = os.path.abspath(os.path.join(build, "..", "libtorch"))
    binary = os.path.join(dest, "train_step")
    how = "found, brought up to date" if os.access(binary, os.X_OK) else "built now"
    print(f"libtorch peer: building bench/libtorch into {dest}", flush=True)
    steps = [] if os.path.exists(os.path.join(dest, "CMakeCache.txt")) else [
        ["cmake", "-S", os.path.join(ROOT, "bench", "libtorch"), "-B", dest, "-DCMAKE_BUILD_TYPE=Release"]]
    for cmd in steps + [["cmake", "--build", dest, "-j2"]]:
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({out.returncode}); libtorch needs Debian's libtorch-dev, "
                     f"or pass --libtorch PATH or --libtorch none:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return binary, f"{how} from bench/libtorch/train_step.cpp"


# Per --target: the environment of smallgrad's runs, and the peers' set-ups.
NARROW = {
    "avx2": {"smallgrad": {"BLIS_ARCH_TYPE": "6"},
             "openblas-zen": {"OPENBLAS_CORETYPE": "Zen", "ATEN_CPU_CAPABILITY": "avx2"},
             "blis-zen3": {"BLIS_ARCH_TYPE": "6", "ATEN_CPU_CAPABILITY": "avx2"}},
    "sse42": {"smallgrad": {"BLIS_ARCH_TYPE": "5"},
              "openblas-nehalem": {"OPENBLAS_CORETYPE": "Nehalem", "ATEN_CPU_CAPABILITY": "default"},
              "blis-penryn": {"BLIS_ARCH_TYPE": "5", "ATEN_CPU_CAPABILITY": "default"}},
}


def has_avx512():
    """Whether this CPU runs AVX-512 (a Zen 3 does not: BLIS's skx kernels would stop on an illegal
    instruction there)."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " avx512f" in line for line in f)
    except OSError:
        return False


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
    # BLIS on its widest kernels: skx with AVX-512, else zen3 (AVX2 + FMA), what it picks on a Zen 3.
    blis = ("blis-avx512", "0") if has_avx512() else ("blis-zen3", "6")
    return {
        "openblas": dict(base, LD_LIBRARY_PATH=openblas, OPENBLAS_NUM_THREADS="1"),
        blis[0]: dict(base, BLIS_ARCH_TYPE=blis[1], BLIS_NUM_THREADS="1"),
        "system": dict(base),
    }


def peers(envs, torch_script, libtorch=None):
    """{peer: (command, environment)}: PyTorch's script in every set-up of envs, and after each the libtorch
    binary (if any) in the same set-up."""
    out = {}
    for name, env in envs.items():
        out[f"PyTorch {name}"] = (["/usr/bin/python3", os.path.join(ROOT, "bench", torch_script)], env)
        if libtorch:
            out[f"libtorch {name}"] = ([libtorch], env)
    return out


def run(cmd, env):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr}")
    for line in out.stdout.splitlines():
        m = LINE.match(line)
        if m:
            return {"ms": float(m[3]), "gflops": float(m[4]), "mfu": float(m[5]) if m[5] else None,
                    "peak": float(m[6]) if m[6] else None, "rss": int(m[7]), "step": m[8], "line": line.strip()}
    sys.exit(f"no result line from {' '.join(cmd)}:\n{out.stdout}")


def add_common_flags(p, configs):
    """The flags both training-step comparisons take (this one and compare_seq2seq_step.py)."""
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--configs", default=configs)
    p.add_argument("--build", help="smallgrad's build folder (default build/release)")
    p.add_argument("--openblas", help="folder holding OpenBLAS's libblas.so.3 (openblas-pthread)")
    p.add_argument("--dropout", type=float, default=0.1)


def parse_common(p, a, steps, program, preset="release"):
    """(thread counts, configurations, smallgrad's benchmark) from add_common_flags' flags, a.build set
    (build/<preset> unless given); a bad value is a usage error (exit status 2), a missing build a one-line
    exit."""
    a.build = a.build or os.path.join(ROOT, "build", preset)
    try:
        threads = [int(t) for t in a.threads.split(",")]
    except ValueError:
        p.error(f"--threads: expected comma-separated integers, got {a.threads!r}")
    configs = a.configs.split(",")
    if any(c not in steps for c in configs) or a.rounds < 1 or any(t < 1 for t in threads):
        p.error(f"--configs from {','.join(steps)}, --rounds and --threads at least 1")
    sg_bin = os.path.join(a.build, "bench", program)
    if not os.access(sg_bin, os.X_OK):
        sys.exit(f"{sg_bin} not found; build first: scripts/setup.sh {preset}")
    return threads, configs, sg_bin


def interleaved_rounds(a, threads, configs, steps, sg_bin, sg_env, peer_cmds, run_one):
    """{(implementation, config, threads): [run, ...]}: a.rounds rounds, each running smallgrad and then
    every peer of peer_cmds (peers()) on every configuration and thread count, one process each, printed
    as they come (run_one(cmd, env) reads a run's result line)."""
    results = {}
    for r in range(1, a.rounds + 1):
        for t in threads:
            for c in configs:
                common = ["--config", c, "--threads", str(t), "--steps", str(steps[c]), "--warmup", "3",
                          "--dropout", str(a.dropout)]
                for impl in ["smallgrad", *peer_cmds]:
                    if impl == "smallgrad":
                        res = run_one([sg_bin, *common], dict(os.environ, OMP_NUM_THREADS=str(t), **sg_env))
                    else:
                        cmd, env = peer_cmds[impl]
                        res = run_one([*cmd, *common], env)
                    results.setdefault((impl, c, t), []).append(res)
                    print(f"round {r}  {impl:<21} {res['line']}", flush=True)
    return results


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_flags(p, "tiny,medium,large")
    p.add_argument("--target", default="native", choices=["native", *NARROW],
                   help="vector width of both sides (default: this machine's)")
    p.add_argument("--libtorch", help="libtorch's train_step (default: build/libtorch/train_step, built if "
                   "need be), or none to leave libtorch out")
    a = p.parse_args()  # bad flags: usage and exit status 2
    threads, configs, sg_bin = parse_common(p, a, STEPS, "train_step", "release" if a.target == "native" else a.target)
    libtorch, libtorch_from = find_libtorch(a.build, a.libtorch)
    openblas = a.openblas or find_openblas(a.build)
    envs = setups(openblas, a.target)
    peer_cmds = peers(envs, "torch_train_step.py", libtorch)
    sg_env = NARROW.get(a.target, {}).get("smallgrad", {})
    targets, target_mfu, target_speedup = TARGETS[a.target], TARGET_MFU.get(a.target), TARGET_SPEEDUP.get(a.target)

    print(f"training step, float32, dropout {a.dropout}; {a.rounds} alternating rounds; steps per run "
          + ", ".join(f"{c} {STEPS[c]}" for c in configs) + " (after 3 warm-up steps)")
    print(f"target {a.target}: smallgrad from {a.build} with {sg_env or 'its own BLIS choice'}")
    print(f"OpenBLAS from {openblas}")
    print(f"libtorch: {libtorch or '-'}, {libtorch_from}")
    print(f"load at start: {open('/proc/loadavg').read().split()[:3]}")
    results = interleaved_rounds(a, threads, configs, STEPS, sg_bin, sg_env, peer_cmds, run)

    med = lambda impl, c, t, key: statistics.median(x[key] for x in results[(impl, c, t)])  # noqa: E731
    print("\nmedian over rounds of each run's median ms/step; ratio = fastest peer / smallgrad")
    print("| config | threads | smallgrad ms | " + " | ".join(f"{i} ms" for i in peer_cmds)
          + " | ratio | target | MFU | ratio at the peak | peak RSS MiB (smallgrad / smallest peer) |")
    print("|---|---|---|" + "---|" * len(peer_cmds) + "---|---|---|---|---|")
    checks = []
    for c in configs:
        for t in threads:
            ours = med("smallgrad", c, t, "ms")
            peer_ms = {i: med(i, c, t, "ms") for i in peer_cmds}
            best = min(peer_ms, key=peer_ms.get)
            ratio = peer_ms[best] / ours
            mfu = med("smallgrad", c, t, "mfu")
            rss = med("smallgrad", c, t, "rss")
            target = targets.get(c) if t == 1 else None
            # The ratio smallgrad would reach if every FLOP of the step ran at the sgemm peak and nothing
            # else took time: the most any kernel work can give against these peers on this CPU.
            ceiling = ratio / (mfu / 100)
            print(f"| {c} | {t} | {ours:.2f} | " + " | ".join(f"{peer_ms[i]:.2f}" for i in peer_cmds)
                  + f" | {ratio:.2f} ({best}) | {target or '-'} | {mfu:.1f}% | {ceiling:.2f} | {rss:.0f} / "
                  f"{min(med(i, c, t, 'rss') for i in peer_cmds):.0f} |")
            if target:
                checks.append((f"{c}, 1 thread: {ratio:.2f}x the fastest peer ({best}), target {target}x "
                               f"(at the sgemm peak: {ceiling:.2f}x)", ratio >= target))
            if c == "large" and t == 1 and target_mfu:
                checks.append((f"large, 1 thread: {mfu:.1f}% of the sgemm peak ({med('smallgrad', c, t, 'peak'):.0f}"
                               f" GFLOP/s), target {target_mfu:.0f}%", mfu >= target_mfu))
    if target_speedup and "medium" in configs and 1 in threads and 2 in threads:
        # The median of each round's own speed-up (its 1-thread run over its 2-thread run, minutes apart at
        # most): on a shared machine a core's speed drifts between rounds, and a ratio of medians from
        # different rounds would carry the drift.
        speedup = statistics.median(one["ms"] / two["ms"] for one, two in
                                    zip(results[("smallgrad", "medium", 1)], results[("smallgrad", "medium", 2)]))
        step = results[("smallgrad", "medium", 2)][0]["step"] or "step not printed"
        checks.append((f"medium: 2 threads ({step}) {speedup:.2f}x faster than 1, target {target_speedup}x",
                       speedup >= target_speedup and step == "data-parallel"))
    print("\ntargets:")
    for text, ok in checks:
        print(f"  {'met   ' if ok else 'MISSED'}  {text}")
    print(f"load at end: {open('/proc/loadavg').read().split()[:3]}")
    print("all targets met" if all(ok for _, ok in checks) else "some targets missed")


if __name__ == "__main__":
    main()
