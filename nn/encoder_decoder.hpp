#pragma once
// The encoder-decoder of Dive into Deep Learning (sections 10.6 and 11.7,
// d2l.EncoderDecoder and d2l.Seq2Seq): the TransformerEncoder reads the
// source, the TransformerDecoder writes the target, trained with teacher
// forcing (the decoder reads <bos> and the labels but the last, and
// predicts the labels).
//
// Parameter names: "encoder." and "decoder." then each part's own, as in
// d2l's Seq2Seq; the one difference is the encoder's blocks, "blocks.<i>"
// here (the positions study's checkpoints keep that name) and
// "blks.block<i>" in d2l. to_d2l_name and from_d2l_name map one to the
// other, so with sinusoidal positions and post-norm a state_dict loads into
// d2l's Seq2Seq with strict=True, and back.
#include <string>

#include "nn/decoder.hpp"
#include "nn/loss.hpp"  // sequence_loss, d2l's Seq2Seq.loss
#include "nn/transformer.hpp"

namespace sg::nn {

class EncoderDecoder : public Module {
 public:
  // The encoder's `causal` option must be off (the source is read whole).
  EncoderDecoder(const TransformerEncoderOptions& encoder, const TransformerDecoderOptions& decoder);
  // Teacher forcing: src (B, S) int64, S >= 1; dec_input (B, T) int64;
  // src_valid_lens undefined or (B) int64, each in [1, S] -> logits (B, T,
  // target vocabulary).
  Tensor forward(const Tensor& src, const Tensor& dec_input, const Tensor& src_valid_lens = Tensor(),
                 DropoutKeys* dropout_keys = nullptr, DecoderAttentionWeights* weights = nullptr) const;
  // Encodes the source and returns the decoder's state for step() (what
  // d2l's predict_step does before its loop). Same checks as forward.
  DecoderState start(const Tensor& src, const Tensor& src_valid_lens = Tensor(),
                     DecodingMode mode = DecodingMode::cached) const;

  std::shared_ptr<TransformerEncoder> encoder;
  std::shared_ptr<TransformerDecoder> decoder;
};

// smallgrad's name of an EncoderDecoder tensor -> d2l's ("encoder.blocks.3."
// -> "encoder.blks.block3."; every other name is the same), and back.
std::string to_d2l_name(const std::string& name);
std::string from_d2l_name(const std::string& name);

}  // namespace sg::nn
