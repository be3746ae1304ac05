#!/usr/bin/python3
"""examples/pronounce's model in PyTorch, on the same split: d2l 11.7's
encoder-decoder (the classes of tests/fixtures/make_fixtures.py, whose
float64 fixture matches smallgrad's to rounding), the same sizes, training
(AdamW, linear warm-up and cosine decay, global-norm clipping, d2l's masked
loss with teacher forcing, batches cut to their longest word) and scores
(word and phone error rate on the test words, greedy decoding with every
token at its own position), for the side-by-side table in docs/results.md.

    build/release/examples/pronounce --out out/pronounce      # writes out/pronounce/split.tsv
    /usr/bin/python3 scripts/pronounce_torch.py out/pronounce/split.tsv [--threads 2] [--steps N] ...

The defaults are pronounce's. Prints the settings, the training time, the
test scores and a few pronunciations. --device cuda trains on a GPU
(PyTorch 2.0 or later): the same model and scores, far sooner; its times
are then not a CPU's.
"""
import argparse
import collections
import math
import os
import random
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures"))
from make_fixtures import make_seq2seq  # noqa: E402

SPECIALS = ["<unk>", "<pad>", "<bos>", "<eos>"]


def edit_distance(a, b):
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        diagonal, row[0] = row[0], i
        for j in range(1, len(b) + 1):
            above = row[j]
            row[j] = min(above + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1]))
            diagonal = above
    return row[len(b)]


def read_split(path):
    prons = collections.defaultdict(list)
    sets = {}
    with open(path, encoding="ascii") as f:
        if f.readline().rstrip("\n") != "word\tset\tpronunciation":
            sys.exit(f"pronounce_torch: {path}: not a split.tsv (its first line is not the header)")
        for number, line in enumerate(f, 2):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3 or parts[1] not in ("train", "dev", "test"):
                sys.exit(f"pronounce_torch: {path}:{number}: expected word, set, pronunciation")
            prons[parts[0]].append(parts[2].split())
            sets[parts[0]] = parts[1]
    return prons, sets


def vocab(sequences):
    counts = collections.Counter(t for s in sequences for t in s)
    tokens = SPECIALS + [t for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return {t: i for i, t in enumerate(tokens)}, tokens


def batch(src, tgt, sv, tv, steps):
    """d2l's arrays (src with <eos>, dec_input <bos> + labels[:-1], labels with <eos>), cut to the longest pair."""
    S = max(len(s) for s in src) + 1
    T = max(len(t) for t in tgt) + 1
    assert S <= steps and T <= steps
    xs = [([sv.get(c, 0) for c in s] + [sv["<eos>"]] + [sv["<pad>"]] * S)[:S] for s in src]
    ys = [([tv.get(p, 0) for p in t] + [tv["<eos>"]] + [tv["<pad>"]] * T)[:T] for t in tgt]
    X, Y = torch.tensor(xs), torch.tensor(ys)  # one copy each (to the default device)
    lens = torch.tensor([len(s) + 1 for s in src])
    dec_input = torch.cat([torch.full((len(src), 1), tv["<bos>"], dtype=torch.int64), Y[:, :-1]], 1)
    return X, lens, dec_input, Y


def lr_at(step, a):
    warmup = min(a.warmup, a.steps)
    if step < warmup:
        return a.lr * (step + 1) / warmup
    if step >= a.steps:
        return a.min_lr
    progress = (step - warmup) / (a.steps - warmup)
    return a.min_lr + (a.lr - a.min_lr) * 0.5 * (1 + math.cos(math.pi * progress))


@torch.no_grad()
def greedy(model, words, sv, tv, tv_tokens, steps):
    """Every token at its own position: the decoder reads the whole prefix at
    each step with its causal mask (training mode's, with dropout off)."""
    model.train()
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    order = sorted(range(len(words)), key=lambda i: len(words[i]))
    out = [None] * len(words)
    for at in range(0, len(order), 512):
        chunk = order[at:at + 512]
        X, lens, _, _ = batch([words[i] for i in chunk], [[] for _ in chunk], sv, tv, steps)
        enc = model.encoder(X, lens)
        prefix = torch.full((len(chunk), 1), tv["<bos>"], dtype=torch.int64)
        done = torch.zeros(len(chunk), dtype=torch.bool)
        for _ in range(steps):
            Y, _ = model.decoder(prefix, model.decoder.init_state(enc, lens))
            nxt = Y[:, -1].argmax(-1)
            prefix = torch.cat([prefix, nxt[:, None]], 1)
            done |= nxt == tv["<eos>"]
            if done.all():
                break
        for row, i in enumerate(chunk):
            ids = prefix[row, 1:].tolist()
            ids = ids[:ids.index(tv["<eos>"])] if tv["<eos>"] in ids else ids
            out[i] = [tv_tokens[j] for j in ids]
    return out


def scores(preds, refs):
    wrong = errors = phones = 0
    for p, rs in zip(preds, refs):
        best = min(((edit_distance(p, r), len(r)) for r in rs), key=lambda x: x[0])
        wrong += best[0] != 0
        errors += best[0]
        phones += best[1]
    return wrong / len(preds), errors / phones


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("split", help="split.tsv from examples/pronounce's output folder")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=6000)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1.5e-3)
    ap.add_argument("--min-lr", type=float, default=1e-5)
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--ffn", type=int, default=512)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--blocks", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu", help="cpu, or cuda (PyTorch 2.0 or later)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.device != "cpu":
        if not hasattr(torch, "set_default_device"):
            sys.exit(f"pronounce_torch: --device {a.device} needs PyTorch 2.0 or later (this is {torch.__version__})")
        torch.set_default_device(a.device)  # the fixture classes make their masks and tables on the default device
    torch.manual_seed(a.seed)
    prons, sets = read_split(a.split)
    train_words = sorted(w for w in prons if sets[w] == "train")
    test_words = sorted(w for w in prons if sets[w] == "test")
    pairs = [(list(w), p) for w in train_words for p in prons[w]]
    steps = max(max(len(w) for w in prons), max(len(p) for ps in prons.values() for p in ps)) + 1
    sv, _ = vocab([s for s, _ in pairs])
    tv, tv_tokens = vocab([t for _, t in pairs])
    model = make_seq2seq({"src_vocab": len(sv), "tgt_vocab": len(tv), "num_hiddens": a.hidden,
                          "ffn_num_hiddens": a.ffn, "num_heads": a.heads, "num_blocks": a.blocks,
                          "pad": tv["<pad>"]}, a.dropout)
    for m in model.modules():  # every PositionalEncoding's table long enough, on the model's device
        if hasattr(m, "P"):
            m.P = m.P[:, :max(steps, 32)]
    parameters = sum(p.numel() for p in model.parameters())
    where = (f"{a.threads} thread" + ("s" if a.threads != 1 else "")) if a.device == "cpu" else a.device
    print(f"PyTorch {torch.__version__}, {where}, seed {a.seed}; {len(train_words)} training words ({len(pairs)} "
          f"pronunciations), {len(test_words)} test words; {a.blocks}+{a.blocks} blocks, width {a.hidden}, "
          f"FFN {a.ffn}, {a.heads} heads, {parameters} parameters; {a.steps} steps x {a.batch}", flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=a.weight_decay)
    order = random.Random(a.seed * 7919 + 1)
    if a.device != "cpu":
        torch.cuda.synchronize()
    epoch, start = [], time.time()
    model.train()
    for step in range(a.steps):
        if not epoch:
            idx = list(range(len(pairs)))
            order.shuffle(idx)
            epoch = [idx[i:i + a.batch] for i in range(0, len(idx), a.batch)][::-1]
        rows = epoch.pop()
        X, lens, dec_input, Y = batch([pairs[i][0] for i in rows], [pairs[i][1] for i in rows], sv, tv, steps)
        opt.zero_grad()
        loss = model.loss(model(X, dec_input, lens), Y)
        loss.backward()
        if a.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a)
        opt.step()
        if (step + 1) % 500 == 0 or step + 1 == a.steps:
            print(f"step {step + 1}/{a.steps}  loss {loss.item():.4f}  {time.time() - start:.0f} s", flush=True)
    seconds = time.time() - start
    start = time.time()
    preds = greedy(model, [list(w) for w in test_words], sv, tv, tv_tokens, steps)
    decode_seconds = time.time() - start
    wer, per = scores(preds, [prons[w] for w in test_words])
    print(f"\ntrained {a.steps} steps in {seconds:.1f} s\n")
    print("| framework | search | word error rate | phone error rate | training seconds | decoding seconds |")
    print("|---|---|---|---|---|---|")
    print(f"| PyTorch {torch.__version__} ({where}, seed {a.seed}) | greedy | {100 * wer:.1f}% | {100 * per:.1f}% | {seconds:.0f} | "
          f"{decode_seconds:.1f} |")
    print("\n| word | pronunciation (dictionary) | greedy |\n|---|---|---|")
    for i in range(0, len(test_words), max(1, len(test_words) // 8)):
        print(f"| {test_words[i]} | {' / '.join(' '.join(p) for p in prons[test_words[i]])} | "
              f"{' '.join(preds[i]) or '(nothing)'} |")


if __name__ == "__main__":
    main()
