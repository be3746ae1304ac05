#!/usr/bin/python3
"""bench/gpt_step.cpp's training step in PyTorch: the same GPT (nanoGPT's
architecture: tests/fixtures/make_gpt_fixture.py defines it, and its
fixtures prove it matches smallgrad's), shapes, loss, clipping and AdamW
(two parameter groups, as nanoGPT's configure_optimizers).

    /usr/bin/python3 bench/torch_gpt_step.py [--config baby|shakespeare] [--threads N] [--steps N] [--warmup N]
                                             [--nanogpt PATH/model.py]

--nanogpt times nanoGPT's own model.py instead (its GPT and
configure_optimizers), run as it is. Prints one line in gpt_step's format.
"""
import argparse
import importlib.util
import os
import statistics
import sys
import time

import torch
from torch.nn import functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures"))

CONFIGS = {"baby": dict(n_layer=4, n_head=4, n_embd=128, block_size=64),
           "shakespeare": dict(n_layer=6, n_head=6, n_embd=384, block_size=256)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", choices=CONFIGS, default="baby")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--nanogpt", help="nanoGPT's model.py, to time its GPT instead")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    c = dict(CONFIGS[a.config], vocab_size=73, bias=False)
    batch = 12
    if a.nanogpt:
        spec = importlib.util.spec_from_file_location("nanogpt_model", a.nanogpt)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        model = mod.GPT(mod.GPTConfig(dropout=0.0, **c))
        opt = model.configure_optimizers(0.1, 1e-3, (0.9, 0.99), "cpu")
        forward = lambda x, y: model(x, y)[1]
        who = "nanoGPT"
    else:
        from make_gpt_fixture import GPT
        model = GPT(dict(c, tied=True))
        decay = [p for p in model.parameters() if p.dim() >= 2]
        no_decay = [p for p in model.parameters() if p.dim() < 2]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                                lr=1e-3, betas=(0.9, 0.99))
        forward = lambda x, y: F.cross_entropy(model(x).view(-1, 73), y.view(-1))
        who = "pytorch"
    times = []
    for step in range(a.warmup + a.steps):
        x = torch.randint(0, 73, (batch, c["block_size"]))
        y = torch.randint(0, 73, (batch, c["block_size"]))
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = forward(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step >= a.warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    print(f"{who} {torch.__version__} gpt {a.config} threads {a.threads}: median {statistics.median(times):.2f} ms/step "
          f"(min {min(times):.2f}, max {max(times):.2f}, {a.steps} steps)")


if __name__ == "__main__":
    main()
