#!/usr/bin/python3
"""PyTorch peer of bench/autograd_overhead.cpp: the same chain, the same timing.

    /usr/bin/python3 bench/torch_autograd_overhead.py [--threads N] [--ops N] [--size N] [--reps R]

Debian's python3-torch runs with /usr/bin/python3 (not a python3 earlier on
PATH). The chain repeats h = h * w; h = h + b; h = tanh(h); h = h * 0.9 for
--ops ops on float32 tensors of --size elements, then loss = h.sum() and
loss.backward(); x, w and b require grad. Each repetition clears the grads
(grad = None), runs forward and backward, and is timed as a whole and in its
halves. Prints medians and one RESULT line in the C++ benchmark's format.
"""
import argparse
import math
import statistics
import sys
import time

import torch


def positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def make(n, which):
    # Same values as the C++ benchmark: sin(i), 1 + 0.1 cos(i), 0.01 (i mod 7).
    if which == 0:
        values = [math.sin(i) for i in range(n)]
    elif which == 1:
        values = [1.0 + 0.1 * math.cos(i) for i in range(n)]
    else:
        values = [0.01 * (i % 7) for i in range(n)]
    return torch.tensor(values, dtype=torch.float32, requires_grad=True)


def chain(x, w, b, ops):
    h = x
    for i in range(ops):
        k = i % 4
        if k == 0:
            h = h * w
        elif k == 1:
            h = h + b
        elif k == 2:
            h = torch.tanh(h)
        else:
            h = h * 0.9
    return h


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=positive, default=None,
                        help="torch.set_num_threads(N) (default: PyTorch's default)")
    parser.add_argument("--ops", type=positive, default=1000, help="ops in the chain (default 1000)")
    parser.add_argument("--size", type=positive, default=64, help="elements per tensor (default 64)")
    parser.add_argument("--reps", type=positive, default=200,
                        help="timed repetitions; medians are reported (default 200)")
    args = parser.parse_args()  # a bad flag prints usage and exits with status 2
    if args.threads:
        torch.set_num_threads(args.threads)

    x, w, b = make(args.size, 0), make(args.size, 1), make(args.size, 2)
    loss_value = 0.0

    def run():
        nonlocal loss_value
        for t in (x, w, b):
            t.grad = None
        t0 = time.perf_counter()
        loss = chain(x, w, b, args.ops).sum()
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        loss_value = loss.item()
        return t1 - t0, t2 - t1

    for _ in range(min(10, args.reps)):  # warm up
        run()
    fwd, bwd, total = [], [], []
    for _ in range(args.reps):
        f, bk = run()
        fwd.append(f)
        bwd.append(bk)
        total.append(f + bk)
    grad_w = float(w.grad.double().sum())

    t = statistics.median(total)
    us_per_op = t * 1e6 / args.ops
    threads = torch.get_num_threads()
    print(f"PyTorch {torch.__version__} autograd overhead: {args.ops}-op chain on {args.size}-element "
          f"float32 tensors, {threads} thread(s), {args.reps} reps")
    print(f"  forward   {statistics.median(fwd) * 1e6:10.1f} us (median)")
    print(f"  backward  {statistics.median(bwd) * 1e6:10.1f} us (median)")
    print(f"  total     {t * 1e6:10.1f} us = {1 / t:.1f} chains/s, {us_per_op:.3f} us per op "
          f"(forward + backward)")
    print(f"RESULT impl=torch threads={threads} ops={args.ops} size={args.size} reps={args.reps} "
          f"fwd_us={statistics.median(fwd) * 1e6:.2f} bwd_us={statistics.median(bwd) * 1e6:.2f} "
          f"total_us={t * 1e6:.2f} chains_per_s={1 / t:.2f} us_per_op={us_per_op:.4f} "
          f"loss={loss_value:.6g} grad_w={grad_w:.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
