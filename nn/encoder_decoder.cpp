#include "nn/encoder_decoder.hpp"


namespace sg::nn {
namespace {

// The source's checks, shared by forward and start: one message each,
// naming the values, before the encoder runs.
void check_source(const TransformerEncoderOptions& o, const Tensor& src, const Tensor& lens, const char* who) {
  if (src.dtype() != int64 || src.dim() != 2)
    fail(who, ": source ids must be int64 (batch, steps), got ", src.dtype(), " ", src.shape());
  const int64_t batch = src.shape()[0], steps = src.shape()[1];
  if (steps < 1) fail(who, ": the source is empty, shape ", src.shape(), " (every source needs a token)");
  if (positional_kind(o.positional).acts == PositionsAct::embeddings && steps > o.max_len)
    fail(who, ": the source has ", steps, " tokens, longer than the encoder's positions table (max_len ",
         o.max_len, ")");
  if (!lens.defined()) return;
  if (lens.dtype() != int64 || lens.shape() != Shape{batch})
    fail(who, ": src_valid_lens must be int64 (", batch, "), got ", lens.dtype(), " ", lens.shape());
  const int64_t* l = lens.data<int64_t>();
  for (int64_t b = 0; b < batch; ++b)
    if (l[b] < 0 || l[b] > steps)
      fail(who, ": source ", b, " has valid length ", l[b], ", outside [0, ", steps, "] for source ids ",
           src.shape());
}

// The source's and the decoder input's checks, shared by forward and predict_forward.
void check_inputs(const TransformerEncoderOptions& o, const Tensor& src, const Tensor& dec_input, const Tensor& lens,
                  const char* who) {
  check_source(o, src, lens, who);
  if (dec_input.dim() != 2 || dec_input.shape()[0] != src.shape()[0] || dec_input.shape()[1] < 1)
    fail(who, ": decoder input ", dec_input.shape(), " must be (", src.shape()[0], ", T >= 1) for source ids ",
         src.shape());
}

TransformerEncoderOptions with_d2l_names(TransformerEncoderOptions e) {
  e.d2l_names = true;
  return e;
}

}  // namespace

EncoderDecoder::EncoderDecoder(const TransformerEncoderOptions& e, const TransformerDecoderOptions& d) {
  if (e.causal) fail("EncoderDecoder: the encoder reads the whole source: its causal option must be off");
  if (e.num_hiddens != d.num_hiddens)
    fail("EncoderDecoder: encoder num_hiddens ", e.num_hiddens, " and decoder num_hiddens ", d.num_hiddens,
         " differ (the decoder attends to the encoder's outputs)");
  encoder = register_module("encoder", std::make_shared<TransformerEncoder>(with_d2l_names(e)));
  decoder = register_module("decoder", std::make_shared<TransformerDecoder>(d));
}

Tensor EncoderDecoder::forward(const Tensor& src, const Tensor& dec_input, const Tensor& src_valid_lens,
                               DropoutKeys* keys, DecoderAttentionWeights* weights) const {
  check_inputs(encoder->options, src, dec_input, src_valid_lens, "EncoderDecoder");
  const Tensor enc = encoder->forward(src, src_valid_lens, keys);
  return decoder->forward(dec_input, enc, src_valid_lens, keys, weights);
}

DecoderState EncoderDecoder::start(const Tensor& src, const Tensor& src_valid_lens, DecodingMode mode) const {
  check_source(encoder->options, src, src_valid_lens, "EncoderDecoder::start");
  return decoder->init_state(encoder->forward(src, src_valid_lens), src_valid_lens, mode);
}

Tensor EncoderDecoder::predict_forward(const Tensor& src, const Tensor& dec_input, const Tensor& src_valid_lens,
                                       DecoderAttentionWeights* weights) const {
  check_inputs(encoder->options, src, dec_input, src_valid_lens, "EncoderDecoder::predict_forward");
  if (is_training())
    fail("EncoderDecoder::predict_forward: the model is in training mode (dropout on): call eval() first");
  DecoderState state = decoder->init_state(encoder->forward(src, src_valid_lens), src_valid_lens, DecodingMode::d2l);
  return decoder->step(dec_input, state, weights);
}

}  // namespace sg::nn
