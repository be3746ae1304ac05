#!/usr/bin/python3
"""d2l's PyTorch decoding loop, timed on bench/decode_speed.cpp's model and lengths.

    /usr/bin/python3 bench/torch_decode_speed.py [--threads N] [--reps N] [--batch N]

The loop is d2l's predict_step (EncoderDecoder, section 10.6/11.7) with
d2l's TransformerDecoder (the classes in tests/fixtures/make_fixtures.py):
encode the sources, then one token per step, each block keeping its inputs
(d2l's state[2][i], its only cache) and projecting the keys and values of
the whole prefix again, the next token the arg-max. Eval mode, no_grad.
The model is decode_speed's: 2 + 2 blocks, width 64, FFN 128, 4 heads,
vocabularies of 32, sources of 8 tokens (ids 4 + i mod 28), untrained.
For each output length it prints the median target tokens per second over
--reps runs after one warm-up, in decode_speed's layout (one column).
"""
import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures"))
from make_fixtures import make_seq2seq  # noqa: E402

LENGTHS = [8, 16, 32, 64, 128]


def decode_seconds(model, src, steps):
    t0 = time.perf_counter()
    with torch.no_grad():
        state = model.decoder.init_state(model.encoder(src, None), None)
        ids = torch.full((src.shape[0], 1), 2, dtype=torch.int64)  # any first token, as decode_speed
        for _ in range(steps):
            Y, state = model.decoder(ids, state)
            ids = Y.argmax(2)
    return time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--batch", type=int, default=32)
    a = p.parse_args()  # bad flags: usage and exit status 2
    if a.threads < 1 or a.reps < 1 or a.batch < 1:
        p.error("--threads, --reps and --batch must be at least 1")
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = make_seq2seq({"src_vocab": 32, "tgt_vocab": 32, "num_hiddens": 64, "ffn_num_hiddens": 128,
                          "num_heads": 4, "num_blocks": 2, "pad": 0}, 0.1)
    model.eval()
    src = (4 + torch.arange(a.batch * 8) % 28).reshape(a.batch, 8)
    print(f"d2l's PyTorch decoding loop, {a.batch} sources at once, {a.threads} thread(s), median of {a.reps} "
          "runs: target tokens per second")
    print(f"{'length':>8} {'torch d2l':>14}")
    for L in LENGTHS:
        times = [decode_seconds(model, src, L) for _ in range(a.reps + 1)][1:]  # run 0 warms up
        print(f"{L:8d} {a.batch * L / statistics.median(times):14.0f}", flush=True)


if __name__ == "__main__":
    main()
