#!/usr/bin/python3
"""The training step of bench/seq2seq_train_step.cpp in PyTorch: d2l 11.7's
Seq2Seq (TransformerEncoder + TransformerDecoder, the classes written in
tests/fixtures/make_fixtures.py, whose float64 fixture matches smallgrad's
to rounding), the same shapes, ids, loss (d2l's masked Seq2Seq loss),
optimizer (Adam, lr 1e-3) and dropout.

    /usr/bin/python3 bench/torch_seq2seq_step.py [--config translate|d2l|all]
                                                 [--threads N] [--steps N] [--warmup N] [--dropout P]

Prints one line per configuration in seq2seq_train_step's format. Which
BLAS PyTorch uses is up to the environment; bench/compare_seq2seq_step.py
sets it.
"""
import argparse
import os
import resource
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures"))
from make_fixtures import make_seq2seq  # noqa: E402

CONFIGS = {  # batch, src_len, tgt_len, src_vocab, tgt_vocab, hidden, ffn, heads, blocks
    "translate": (64, 12, 12, 34, 31, 64, 128, 4, 2),
    "d2l": (128, 9, 9, 200, 200, 256, 64, 4, 2),
}


def pattern_ids(batch, steps, vocab, salt):
    """seq2seq_train_step.cpp's pattern_ids with padding: row b's first
    steps - b % (steps // 2) tokens, then 0."""
    ids = torch.zeros(batch, steps, dtype=torch.int64)
    for b in range(batch):
        for t in range(steps - b % (steps // 2)):
            ids[b, t] = 3 + (b * 7 + t * 13 + salt) % (vocab - 3)
    return ids


def run(name, cfg, steps, warmup, dropout):
    batch, src_len, tgt_len, src_vocab, tgt_vocab, hidden, ffn, heads, blocks = cfg
    torch.manual_seed(0)
    model = make_seq2seq({"src_vocab": src_vocab, "tgt_vocab": tgt_vocab, "num_hiddens": hidden,
                          "ffn_num_hiddens": ffn, "num_heads": heads, "num_blocks": blocks, "pad": 0}, dropout)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    src = pattern_ids(batch, src_len, src_vocab, 0)
    labels = pattern_ids(batch, tgt_len, tgt_vocab, 5)
    dec_input = torch.cat([torch.ones(batch, 1, dtype=torch.int64), labels[:, :-1]], 1)
    src_lens = torch.tensor([src_len - b % (src_len // 2) for b in range(batch)])
    model.train()
    times = []
    for s in range(warmup + steps):
        t0 = time.perf_counter()
        loss = model.loss(model(src, dec_input, src_lens), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if s >= warmup:
            times.append(time.perf_counter() - t0)
    ms = statistics.median(times) * 1e3
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"{name:<9} threads {torch.get_num_threads()}  {ms:9.3f} ms/step  {batch * tgt_len / (ms * 1e-3):10.0f} "
          f"tokens/s  peak RSS {rss} MiB  loss {loss.item():.4f}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default="all", choices=["all", *CONFIGS])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--dropout", type=float, default=0.1)
    a = p.parse_args()  # bad flags: usage and exit status 2
    torch.set_num_threads(a.threads)
    for name, cfg in CONFIGS.items():
        if a.config in ("all", name):
            run(name, cfg, a.steps, a.warmup, a.dropout)


if __name__ == "__main__":
    main()
