#pragma once
// The encoder-decoder of Dive into Deep Learning (sections 10.6 and 11.7,
// d2l.EncoderDecoder and d2l.Seq2Seq): the TransformerEncoder reads the
// source, the TransformerDecoder writes the target, trained with teacher
// forcing (the decoder reads <bos> and the labels but the last, and
// predicts the labels).
//
// Parameter names are d2l's Seq2Seq's throughout: "encoder." and
// "decoder." then each part's own, the encoder's blocks "blks.block<i>" as
// the decoder's (the encoder is built with its d2l_names option). With
// sinusoidal positions and post-norm a state_dict loads into d2l's Seq2Seq
// with strict=True, and back; checkpoint/names.hpp maps the names of a
// standalone TransformerEncoder ("blocks.<i>") onto d2l's.
//
// Source valid lengths may be 0, as in the blocks and in d2l: every score
// of a query is then masked alike, so its attention is uniform over the
// padded source.
#include "nn/decoder.hpp"
#include "nn/loss.hpp"  // sequence_loss, d2l's Seq2Seq.loss
#include "nn/transformer.hpp"

namespace sg::nn {

class EncoderDecoder : public Module {
 public:
  // The encoder's `causal` option must be off (the source is read whole).
  EncoderDecoder(const TransformerEncoderOptions& encoder, const TransformerDecoderOptions& decoder);
  // Teacher forcing: src (B, S) int64, S >= 1; dec_input (B, T) int64;
  // src_valid_lens undefined or (B) int64, each in [0, S] -> logits (B, T,
  // target vocabulary).
  Tensor forward(const Tensor& src, const Tensor& dec_input, const Tensor& src_valid_lens = Tensor(),
                 DropoutKeys* dropout_keys = nullptr, DecoderAttentionWeights* weights = nullptr) const;
  // Encodes the source and returns the decoder's state for step() (what
  // d2l's predict_step does before its loop). Same checks as forward.
  DecoderState start(const Tensor& src, const Tensor& src_valid_lens = Tensor(),
                     DecodingMode mode = DecodingMode::cached) const;
  // d2l's forward in prediction mode (the model in eval mode, d2l's
  // Seq2Seq.forward after net.eval()): d2l's TransformerDecoder passes no
  // mask then, so every target token attends to all of dec_input, the
  // later ones included, at positions 0..T-1. Equals feeding dec_input to
  // decoder->step all at once from start(src, src_valid_lens,
  // DecodingMode::d2l). Not the teacher-forced forward (causal), and not
  // what one-token-at-a-time decoding computes past the first token.
  // Shapes and checks as forward; throws in training mode.
  Tensor predict_forward(const Tensor& src, const Tensor& dec_input, const Tensor& src_valid_lens = Tensor(),
                         DecoderAttentionWeights* weights = nullptr) const;

  std::shared_ptr<TransformerEncoder> encoder;
  std::shared_ptr<TransformerDecoder> decoder;
};

}  // namespace sg::nn
