#pragma once
// Sentence pairs into the tensors an encoder-decoder trains on, as d2l's
// machine translation data does (build_array_nmt in d2l 0.17, and
// MTFraEng._build_arrays with Seq2Seq's teacher forcing in d2l 1.0), and the
// shuffled minibatches of an epoch (its DataLoader with shuffle=True).
//
// One pair, num_steps T = 5, source "go ." and target "va !":
//   src        go  .   <eos> <pad> <pad>     src_valid_lens 3
//   labels     va  !   <eos> <pad> <pad>     tgt_valid_lens 3
//   dec_input  <bos> va  !   <eos> <pad>     (<bos>, then labels without their last step)
// <eos> is appended before truncating, so a sentence of T tokens or more loses it.
#include <cstdint>
#include <vector>

#include "core/random.hpp"
#include "core/tensor.hpp"
#include "text/vocab.hpp"

namespace sg::text {

// d2l's truncate_pad: the first num_steps ids, or the ids followed by `pad`
// up to num_steps. num_steps must be at least 1.
std::vector<int64_t> truncate_pad(std::vector<int64_t> ids, int64_t num_steps, int64_t pad);

// Every tensor int64. B sentence pairs, T = num_steps.
struct Seq2SeqBatch {
  Tensor src;             // (B, T) source ids, <eos> appended, truncated or padded
  Tensor src_valid_lens;  // (B) the non-<pad> steps of each source row (as d2l counts them)
  Tensor dec_input;       // (B, T) <bos> then labels[:, :T-1]: the decoder's teacher-forced input
  Tensor labels;          // (B, T) target ids, <eos> appended, truncated or padded
  Tensor tgt_valid_lens;  // (B) the non-<pad> steps of each label row
  int64_t size() const { return src.size(0); }
};

// The batch of all pairs, in their order. Throws when the two lists differ
// in length, are empty, or num_steps is under 1; src_vocab needs <eos> and
// <pad>, tgt_vocab also <bos>.
Seq2SeqBatch build_batch(const std::vector<Tokens>& src, const std::vector<Tokens>& tgt,
                         const Vocab& src_vocab, const Vocab& tgt_vocab, int64_t num_steps);

// The rows of `all` given by `rows` (each in [0, all.size())), in that order.
Seq2SeqBatch select_rows(const Seq2SeqBatch& all, const std::vector<int64_t>& rows);

// The batch cut to its longest source and its longest target: src keeps
// max(src_valid_lens) columns, dec_input and labels max(tgt_valid_lens).
// Only padding goes (a row's valid steps are its first ones), so a model
// that masks padding computes the same loss, with less work when the
// batch's sentences are shorter than num_steps. Throws for an empty batch.
Seq2SeqBatch trim_padding(const Seq2SeqBatch& b);

// One epoch's order: a permutation of 0..count-1 drawn from gen (Fisher-Yates),
// cut into batches of batch_size, the last one shorter when batch_size does
// not divide count (DataLoader's drop_last=False).
std::vector<std::vector<int64_t>> shuffled_batches(int64_t count, int64_t batch_size, Generator& gen);

// select_rows of each of shuffled_batches(all.size(), batch_size, gen).
std::vector<Seq2SeqBatch> shuffled_minibatches(const Seq2SeqBatch& all, int64_t batch_size, Generator& gen);

}  // namespace sg::text
