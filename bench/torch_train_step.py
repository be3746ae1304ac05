#!/usr/bin/python3
"""The training step of bench/train_step.cpp in PyTorch: the same model
(Dive into Deep Learning's TransformerEncoder plus a linear head over the
vocabulary), the same shapes, loss, optimizer (Adam, lr 1e-3) and dropout.

    /usr/bin/python3 bench/torch_train_step.py [--config tiny|medium|large|all]
                                               [--threads N] [--steps N] [--warmup N] [--dropout P]

The d2l layers are the ones tests/fixtures/make_fixtures.py defines (the
fixtures prove they match smallgrad's to float32 precision). Prints one line
per configuration in bench/train_step's format. Which BLAS PyTorch uses is
up to the environment (LD_LIBRARY_PATH); bench/compare_train_step.py sets it.
bench/libtorch/train_step.cpp is this script in libtorch, op for op.
"""
import argparse
import os
import resource
import statistics
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures"))
from make_fixtures import TransformerEncoder  # noqa: E402

CONFIGS = {  # vocab, batch, seq, hidden, heads, ffn, blocks
    "tiny": (16, 64, 16, 64, 4, 128, 2),
    "medium": (64, 32, 64, 128, 4, 256, 2),
    "large": (256, 16, 128, 256, 8, 1024, 4),
}


def flops_per_step(vocab, batch, seq, hidden, heads, ffn, blocks):
    n, h = batch * seq, hidden
    linear = 2 * n * (blocks * (4 * h * h + 2 * h * ffn) + h * vocab)
    attention = 2 * 2 * n * seq * h * blocks
    return 3 * (linear + attention)


def run(name, cfg, steps, warmup, dropout):
    vocab, batch, seq, hidden, heads, ffn, blocks = cfg
    torch.manual_seed(0)
    encoder = TransformerEncoder(vocab, hidden, ffn, heads, blocks, dropout)
    head = nn.Linear(hidden, vocab)
    params = list(encoder.parameters()) + list(head.parameters())
    opt = torch.optim.Adam(params, lr=1e-3)
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, vocab, (batch, seq), generator=gen)
    labels = torch.randint(0, vocab, (batch, seq), generator=gen)
    valid_lens = torch.full((batch,), seq)
    encoder.train()
    times = []
    for s in range(warmup + steps):
        t0 = time.perf_counter()
        logits = head(encoder(ids, valid_lens))
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), labels.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if s >= warmup:
            times.append(time.perf_counter() - t0)
    ms = statistics.median(times) * 1e3
    gflops = flops_per_step(*cfg) / (ms * 1e-3) / 1e9
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"{name:<7} threads {torch.get_num_threads()}  {ms:9.3f} ms/step  {batch * seq / (ms * 1e-3):10.0f} "
          f"tokens/s  {gflops:7.1f} GFLOP/s  peak RSS {rss} MiB  loss {loss.item():.4f}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default="all", choices=["all", *CONFIGS])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--dropout", type=float, default=0.1)
    a = p.parse_args()  # bad flags: usage and exit status 2
    torch.set_num_threads(a.threads)
    for name, cfg in CONFIGS.items():
        if a.config in ("all", name):
            run(name, cfg, a.steps, a.warmup, a.dropout)


if __name__ == "__main__":
    main()
