#pragma once
// A decoder-only language model in the shape of GPT-2 (Radford et al.,
// 2019) and of the "baby GPT" students train from nanoGPT (Dive into Deep
// Learning 11.9): token embedding plus positions, n_layer pre-norm blocks of
// causal self-attention and a 4x MLP with GELU, a final LayerNorm, and a
// language head over the vocabulary, tied to the token embedding by default.
//
// Parameter names and layouts are nanoGPT's GPT state_dict, so a checkpoint
// moves between the two with load_state_dict(strict=True) (a tied head is
// saved under both of its names, as PyTorch's state_dict does):
//   transformer.wte.weight                 (vocab_size, n_embd)
//   transformer.wpe.weight                 (block_size, n_embd)   learned positions only
//   transformer.h.<i>.ln_1.{weight,bias}   (n_embd)
//   transformer.h.<i>.attn.c_attn.{weight,bias}   (3 n_embd, n_embd): q, k, v fused, in that order
//   transformer.h.<i>.attn.c_proj.{weight,bias}   (n_embd, n_embd)
//   transformer.h.<i>.ln_2.{weight,bias}
//   transformer.h.<i>.mlp.c_fc.{weight,bias}      (4 n_embd, n_embd)
//   transformer.h.<i>.mlp.c_proj.{weight,bias}    (n_embd, 4 n_embd)
//   transformer.ln_f.{weight,bias}
//   lm_head.weight                         (vocab_size, n_embd), the wte tensor itself when tied
// (every ".bias" only with bias = true). nanoGPT under a PyTorch without
// scaled_dot_product_attention (before 2.0) also keeps each block's causal
// mask as a buffer "attn.bias"; scripts/gpt_nanogpt.py, which moves a model
// between the two (to-nanogpt writes nanoGPT's ckpt.pt, from-nanogpt reads
// one), adds those when it writes.
//
// Initialisation is GPT-2's: every Linear and Embedding weight N(0, 0.02^2),
// biases zero, the two residual projections (attn.c_proj, mlp.c_proj)
// N(0, (0.02 / sqrt(2 n_layer))^2), LayerNorms ones and zeros.
#include <memory>
#include <vector>

#include "nn/attention.hpp"
#include "nn/basic.hpp"
#include "nn/linear.hpp"
#include "nn/positional.hpp"

namespace sg::nn {

struct GPTOptions {
  int64_t vocab_size = 65;
  int64_t block_size = 64;  // the context: the longest sequence the model reads
  int64_t n_layer = 4;
  int64_t n_head = 4;
  int64_t n_embd = 128;
  double dropout = 0.0;  // on the embeddings, the attention weights and both residual branches
  bool bias = false;     // biases in the Linears and LayerNorms (nanoGPT's train.py default: none)
  bool tie_weights = true;  // lm_head.weight is transformer.wte.weight
  // learned (GPT-2's wpe), sinusoidal (a fixed table added, as learned),
  // none, rotary or alibi (inside every attention layer). Relative positions
  // are the encoder's and decoder's only.
  Positional positional = Positional::learned;
};

// A block's attention keys and values while sampling (GPT::forward_cached),
// one per block: (B, t, n_embd), the heads side by side, keys rotated to
// their positions for rotary.
struct GPTCache {
  std::vector<KeyValueCache> blocks;
  int64_t length() const { return blocks.empty() ? 0 : blocks[0].length(); }
};

// Causal multi-head self-attention with q, k and v projected by one fused
// Linear (c_attn), heads of n_embd / n_head, dropout on the weights and
// after the output projection (c_proj).  x: (B, T, n_embd) -> same shape.
class CausalSelfAttention : public Module {
 public:
  CausalSelfAttention(const GPTOptions& options);
  // weights_out: when given, set to the attention weights (B, heads, T, T), off the graph.
  Tensor forward(const Tensor& x, DropoutKeys* dropout_keys = nullptr, Tensor* weights_out = nullptr) const;
  // x: (B, n, n_embd), the inputs at positions [cache.length(), + n):
  // projects them once, appends their keys and values to `cache` and
  // attends over every cached position up to each query's own.
  Tensor forward_cached(const Tensor& x, KeyValueCache& cache, Tensor* weights_out = nullptr) const;

  int64_t n_head, n_embd;
  Positional positional;
  std::shared_ptr<Linear> c_attn, c_proj;
  std::shared_ptr<Dropout> attn_dropout, resid_dropout;

 private:
  // q, k, v: each (B, T, n_embd), the three thirds of c_attn (x) (rows of
  // c_attn's weight: views, so one parameter gets all three gradients).
  void project(const Tensor& x, Tensor& q, Tensor& k, Tensor& v) const;
  Tensor attend(const Tensor& q, const Tensor& k, const Tensor& v, int64_t offset, DropoutKeys* dropout_keys,
                Tensor* weights_out) const;
};

// c_proj(gelu(c_fc(x))), then dropout.  x: (..., n_embd) -> same
class GPTMLP : public Module {
 public:
  explicit GPTMLP(const GPTOptions& options);
  Tensor forward(const Tensor& x, DropoutKeys* dropout_keys = nullptr) const;
  std::shared_ptr<Linear> c_fc, c_proj;
  std::shared_ptr<Dropout> dropout;
};

// x = x + attn(ln_1(x)); x = x + mlp(ln_2(x)).  x: (B, T, n_embd) -> same
class GPTBlock : public Module {
 public:
  explicit GPTBlock(const GPTOptions& options);
  Tensor forward(const Tensor& x, DropoutKeys* dropout_keys = nullptr, Tensor* weights_out = nullptr) const;
  Tensor forward_cached(const Tensor& x, KeyValueCache& cache, Tensor* weights_out = nullptr) const;
  std::shared_ptr<LayerNorm> ln_1, ln_2;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<GPTMLP> mlp;
};

// The blocks, registered as "0", "1", ... (nanoGPT's ModuleList h).
class GPTBlocks : public Module {
 public:
  void add(std::shared_ptr<GPTBlock> block);
  std::vector<std::shared_ptr<GPTBlock>> blocks;
};

// What nanoGPT calls transformer: embeddings, positions, blocks, final norm.
class GPTTransformer : public Module {
 public:
  explicit GPTTransformer(const GPTOptions& options);
  std::shared_ptr<Embedding> wte, wpe;  // wpe: learned positions only
  std::shared_ptr<Dropout> drop;
  std::shared_ptr<GPTBlocks> h;
  std::shared_ptr<LayerNorm> ln_f;
  Tensor sinusoids;  // sinusoidal only: (block_size, n_embd), a buffer
};

// The language head: logits = x W^T (no bias), W its own or the embedding's.
class LMHead : public Module {
 public:
  // tied: the embedding's table, registered here too; undefined: a table of its own.
  LMHead(int64_t vocab_size, int64_t n_embd, const Tensor& tied = Tensor());
  Tensor weight;  // (vocab_size, n_embd)
};

class GPT : public Module {
 public:
  explicit GPT(const GPTOptions& options);
  // ids: (B, T) int64, T <= block_size, each in [0, vocab_size) -> logits
  // (B, T, vocab_size), position t predicting token t + 1. Causal in
  // training and eval mode alike. attention_weights: when given, set to
  // each block's weights (B, n_head, T, T), off the graph.
  Tensor forward(const Tensor& ids, DropoutKeys* dropout_keys = nullptr,
                 std::vector<Tensor>* attention_weights = nullptr) const;
  // The next tokens through the key/value cache: ids (B, n) at positions
  // [cache.length(), cache.length() + n), which must end by block_size ->
  // logits (B, n, vocab_size); grows the cache by n. Equal to forward() on
  // the whole prefix, to rounding. An empty GPTCache{} starts a sequence.
  Tensor forward_cached(const Tensor& ids, GPTCache& cache,
                        std::vector<Tensor>* attention_weights = nullptr) const;

  GPTOptions options;
  std::shared_ptr<GPTTransformer> transformer;
  std::shared_ptr<LMHead> lm_head;

 private:
  // ids (B, n) -> token embeddings plus positions [offset, offset + n), dropped out.
  Tensor embed(const Tensor& ids, int64_t offset, DropoutKeys* dropout_keys) const;
  Tensor head(const Tensor& x) const;  // ln_f, then lm_head
};

}  // namespace sg::nn
