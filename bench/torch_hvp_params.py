#!/usr/bin/python3
"""PyTorch peer of bench/hvp_params.cpp: hvp over a model's parameters against one gradient.

    /usr/bin/python3 bench/torch_hvp_params.py [--threads N] [--batch N] [--in N] [--hidden N] [--reps R]

Debian's python3-torch runs with /usr/bin/python3. The same model
(Linear(in, hidden) -> tanh -> Linear(hidden, hidden) -> tanh -> Linear(hidden, 1),
float32, MSE loss), the same values (element k of each tensor is
scale * sin(0.37 k + salt)), the same timing: per repetition one gradient
(forward, torch.autograd.grad) then one hvp (forward, grad with
create_graph=True, grad of sum(g * v)), the first repetition untimed; the
ratio reported is the median of each repetition's hvp / gradient.
Prints medians and one RESULT line in the C++ benchmark's format.
"""
import argparse
import math
import statistics
import time

import torch


def positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def filled(shape, salt, scale):
    n = math.prod(shape)
    k = torch.arange(n, dtype=torch.float64)
    return (scale * torch.sin(0.37 * k + salt)).to(torch.float32).reshape(shape)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=positive, default=None, help="torch.set_num_threads(N)")
    parser.add_argument("--batch", type=positive, default=256)
    parser.add_argument("--in", dest="inp", type=positive, default=64)
    parser.add_argument("--hidden", type=positive, default=256)
    parser.add_argument("--reps", type=positive, default=20)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    net = torch.nn.Sequential(torch.nn.Linear(args.inp, args.hidden), torch.nn.Tanh(),
                              torch.nn.Linear(args.hidden, args.hidden), torch.nn.Tanh(),
                              torch.nn.Linear(args.hidden, 1))
    params = list(net.parameters())
    v = []
    salt = 1.0
    with torch.no_grad():
        for p in params:  # the order of smallgrad's: weight, bias per layer
            fan_in = p.shape[1] if p.dim() == 2 else p.shape[0]
            p.copy_(filled(tuple(p.shape), salt, 1 / math.sqrt(fan_in)))
            v.append(filled(tuple(p.shape), salt + 0.5, 1.0))
            salt += 1
    x = filled((args.batch, args.inp), 0.1, 1.0)
    y = filled((args.batch, 1), 0.2, 0.5)

    def loss():
        return torch.nn.functional.mse_loss(net(x), y)

    grad_ms, hvp_ms, ratios = [], [], []  # ratios: each repetition's hvp / gradient
    for r in range(args.reps + 1):
        t0 = time.perf_counter()
        l = loss()
        torch.autograd.grad(l, params)
        gt = (time.perf_counter() - t0) * 1e3
        t0 = time.perf_counter()
        g = torch.autograd.grad(loss(), params, create_graph=True)
        gv = sum((gi * vi).sum() for gi, vi in zip(g, v))
        hv = torch.autograd.grad(gv, params)
        ht = (time.perf_counter() - t0) * 1e3
        if r > 0:
            grad_ms.append(gt)
            hvp_ms.append(ht)
            ratios.append(ht / gt)
        loss_value = l.item()
        vhv = sum(float((h.double() * vi.double()).sum()) for h, vi in zip(hv, v))
    gm, hm, ratio = statistics.median(grad_ms), statistics.median(hvp_ms), statistics.median(ratios)
    n = sum(p.numel() for p in params)
    print(f"torch {torch.__version__}: {n} parameters, batch {args.batch}, {torch.get_num_threads()} thread(s), {args.reps} reps")
    print(f"gradient {gm:.3f} ms, hvp {hm:.3f} ms, hvp / gradient {ratio:.2f}")
    print(f"RESULT impl=torch grad_ms={gm:.4f} hvp_ms={hm:.4f} ratio={ratio:.3f} loss={loss_value:.6g} vhv={vhv:.6g}")


if __name__ == "__main__":
    main()
