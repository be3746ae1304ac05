#!/usr/bin/python3
"""Moves a GPT between smallgrad and nanoGPT (Debian's python3-torch).

    # a train_gpt model -> nanoGPT's out_dir/ckpt.pt (and meta.pkl for a character model)
    scripts/gpt_nanogpt.py to-nanogpt out/gpt/model.safetensors OUT_DIR --model-py nanoGPT/model.py
    # nanoGPT's ckpt.pt (+ its dataset's meta.pkl) -> a model file sample_gpt reads
    scripts/gpt_nanogpt.py from-nanogpt OUT_DIR/ckpt.pt data/x/meta.pkl out/from-nanogpt/model.safetensors

The parameters carry nanoGPT's names and layouts already (nn/gpt.hpp), so
nothing is renamed or transposed: model.safetensors holds the weights
alone, and its tensors are a state_dict nanoGPT's GPT loads as they are
(an older smallgrad's ckpt.safetensors, with "optimizer.*" beside them,
is read too). to-nanogpt builds nanoGPT's GPT from
--model-py and loads the weights with strict=True before writing them: a
nanoGPT running on a PyTorch without scaled_dot_product_attention (before
2.0) keeps a causal mask buffer per block (attn.bias), which is added from
the fresh model. sample.py then samples from OUT_DIR (--out_dir=OUT_DIR;
with the meta.pkl written there copied to data/<dataset>/).
"""
import argparse
import importlib.util
import json
import os
import pickle
import struct
import sys

import torch

DTYPES = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64}


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, e in header.items():
        lo, hi = e["data_offsets"]
        tensors[name] = torch.frombuffer(bytearray(data[lo:hi]), dtype=DTYPES[e["dtype"]]).reshape(e["shape"])
    return tensors, meta


def write_safetensors(path, tensors, meta):
    codes = {v: k for k, v in DTYPES.items()}
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors, key=lambda n: (-tensors[n].element_size(), n)):
        t = tensors[name].detach().contiguous()
        blob = t.numpy().tobytes()
        header[name] = {"dtype": codes[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    header["__metadata__"] = meta
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    os.replace(tmp, path)


def load_model_py(path):
    spec = importlib.util.spec_from_file_location("nanogpt_model", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def to_nanogpt(a):
    tensors, meta = read_safetensors(a.checkpoint)
    s = json.loads(meta["gpt.settings"])
    if s["positional"] != "learned" or s["untied"]:
        sys.exit(f"to-nanogpt: nanoGPT's GPT has learned positions and a tied head; this model has "
                 f"{s['positional']} positions{' and an untied head' if s['untied'] else ''}")
    args = dict(n_layer=s["n-layer"], n_head=s["n-head"], n_embd=s["n-embd"], block_size=s["block-size"],
                bias=s["bias"], vocab_size=s["vocab-size"], dropout=0.0)
    sd = {k: v for k, v in tensors.items() if not k.startswith("optimizer.")}
    mod = load_model_py(a.model_py)
    model = mod.GPT(mod.GPTConfig(**args))
    for k, v in model.state_dict().items():  # the causal masks of a PyTorch before 2.0
        if k.endswith(".attn.bias") and k not in sd:
            sd[k] = v
    model.load_state_dict(sd, strict=True)
    os.makedirs(a.out_dir, exist_ok=True)
    tok = json.loads(meta["gpt.tokenizer"])
    ckpt = {"model": model.state_dict(), "model_args": args, "iter_num": int(meta.get("gpt.iter", 0)),
            "best_val_loss": float("nan"), "config": {"dataset": "smallgrad"}}
    torch.save(ckpt, os.path.join(a.out_dir, "ckpt.pt"))
    if tok["kind"] == "char":
        chars = [chr(c) for c in tok["characters"]]
        with open(os.path.join(a.out_dir, "meta.pkl"), "wb") as f:
            pickle.dump({"vocab_size": len(chars), "itos": dict(enumerate(chars)),
                         "stoi": {c: i for i, c in enumerate(chars)}}, f)
    print(f"loaded into nanoGPT's GPT with strict=True; wrote {a.out_dir}/ckpt.pt")


def from_nanogpt(a):
    ckpt = torch.load(a.ckpt, map_location="cpu")
    args = ckpt["model_args"]
    with open(a.meta, "rb") as f:
        itos = pickle.load(f)["itos"]
    chars = [ord(itos[i]) for i in range(len(itos))]
    if chars != sorted(chars):
        sys.exit("from-nanogpt: meta.pkl's characters are not in code point order")
    prefix = "_orig_mod."  # a compiled model's names
    sd = {k[len(prefix):] if k.startswith(prefix) else k: v for k, v in ckpt["model"].items()}
    sd = {k: v.float() for k, v in sd.items() if not k.endswith(".attn.bias")}
    settings = {"tokenizer": "char", "vocab": 512, "vocab-size": args["vocab_size"], "block-size": args["block_size"],
                "n-layer": args["n_layer"], "n-head": args["n_head"], "n-embd": args["n_embd"], "dropout": 0.0,
                "bias": bool(args["bias"]), "untied": False, "positional": "learned", "batch-size": 12,
                "max-iters": int(ckpt.get("iter_num", 0)), "lr": 1e-3, "min-lr": 1e-4, "warmup-iters": 100,
                "lr-decay-iters": int(ckpt.get("iter_num", 0)), "weight-decay": 0.1, "beta1": 0.9, "beta2": 0.99,
                "grad-clip": 1.0, "eval-interval": 250, "eval-iters": 20, "seed": 1337}
    meta = {"gpt.settings": json.dumps(settings), "gpt.tokenizer": json.dumps({"kind": "char", "characters": chars}),
            "gpt.iter": str(ckpt.get("iter_num", 0))}
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    write_safetensors(a.out, sd, meta)
    print(f"wrote {a.out}: sample_gpt --load {a.out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    t = sub.add_parser("to-nanogpt")
    t.add_argument("checkpoint")
    t.add_argument("out_dir")
    t.add_argument("--model-py", required=True, help="nanoGPT's model.py")
    f = sub.add_parser("from-nanogpt")
    f.add_argument("ckpt")
    f.add_argument("meta")
    f.add_argument("out")
    a = ap.parse_args()
    to_nanogpt(a) if a.command == "to-nanogpt" else from_nanogpt(a)


if __name__ == "__main__":
    main()
