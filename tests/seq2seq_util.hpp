#pragma once
// Helpers of the decoder's, the encoder-decoder's and the searches' tests:
// small models in float64 with random parameters, and a comparison that
// fails on NaN. Included only by those tests.
#include <catch2/catch.hpp>

#include <string>

#include "core/kernels.hpp"
#include "nn/encoder_decoder.hpp"
#include "nn_util.hpp"

namespace test_util {

// A decoder small enough to gradcheck every element: the same shapes as tiny_encoder.
inline sg::nn::TransformerDecoderOptions tiny_decoder(sg::nn::Positional positional, bool pre_norm = false,
                                                      int64_t vocab_size = 9) {
  return {.vocab_size = vocab_size,
          .num_hiddens = 8,
          .ffn_num_hiddens = 12,
          .num_heads = 2,
          .num_blocks = 2,
          .dropout = 0,
          .positional = positional,
          .max_len = 10,
          .max_distance = 2,  // targets of up to 6: offsets up to 5 are clipped
          .pre_norm = pre_norm};
}

// An encoder-decoder (source vocabulary 7, target `target_vocab`), eval
// mode, random parameters (N(0, 0.5^2)), in `dtype`.
inline std::shared_ptr<sg::nn::EncoderDecoder> tiny_model(sg::nn::Positional positional, uint64_t seed,
                                                          bool pre_norm = false, int64_t target_vocab = 9,
                                                          sg::DType dtype = sg::float64) {
  sg::manual_seed(seed);
  auto model = std::make_shared<sg::nn::EncoderDecoder>(tiny_encoder(positional, 0, pre_norm),
                                                        tiny_decoder(positional, pre_norm, target_vocab));
  randomize(*model, seed + 1);
  model->to(dtype);
  model->eval();
  return model;
}

// The largest |a - b| (infinity when the shapes differ or either holds a NaN).
inline double max_abs_diff(const sg::Tensor& a, const sg::Tensor& b) {
  if (a.shape() != b.shape()) return INFINITY;
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = std::abs(x[i] - y[i]);
    if (!(d <= worst)) worst = std::isnan(d) ? INFINITY : d;
  }
  return worst;
}

}  // namespace test_util
