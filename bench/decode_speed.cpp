// Decoding speed: one token at a time with the decoder's key/value cache
// (each step projects the new token only) against d2l's decoding, which
// keeps each block's inputs and projects the keys and values of the whole
// prefix again at every step (nn::DecodingMode::d2l).
//
//   build/release/bench/decode_speed [--threads N] [--reps N] [--batch N]
//
// The model is the translation example's shape (d2l-sized: 2 + 2 blocks,
// width 64, FFN 128, 4 heads, sinusoidal positions, post-norm), untrained,
// in eval mode; vocabularies of 32 tokens, sources of 8 tokens. For each
// output length L it times (median of --reps runs after one warm-up)
// TransformerDecoder::step called L times on one new token per source (the
// arg-max of the previous step), after EncoderDecoder::start, and prints
// target tokens per second for both modes and their ratio. The cache's
// gain should grow with L: step t of the cached decoder projects one token
// and attends over t cached keys; step t of d2l's projects the keys and
// values of all t inputs again, t times the matrix products of one token.
#include <smallgrad.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "flags.hpp"

namespace {

double decode_seconds(const sg::nn::EncoderDecoder& model, const sg::Tensor& src, int64_t steps,
                      sg::nn::DecodingMode mode) {
  sg::NoGradGuard no_grad;
  const auto start = std::chrono::steady_clock::now();
  sg::nn::DecoderState state = model.start(src, sg::Tensor(), mode);
  const int64_t batch = src.size(0);
  sg::Tensor ids = sg::from_vector(std::vector<int64_t>(static_cast<size_t>(batch), 2), {batch, 1});  // any first token
  for (int64_t t = 0; t < steps; ++t) {
    const sg::Tensor logits = model.decoder->step(ids, state);  // (B, 1, V)
    ids = sg::kernel::argmax(logits, -1);                      // (B, 1)
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int usage(const char* argv0, int status) {
  std::fprintf(status ? stderr : stdout, "usage: %s [--threads N] [--reps N] [--batch N]\n", argv0);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, reps = 5, batch = 32;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) return usage(argv[0], 0);
  if (!bench::whole_flags(argc, argv, {{"--threads", &threads}, {"--reps", &reps}, {"--batch", &batch}}, 100000))
    return usage(argv[0], 2);
  sg::set_num_threads(threads);
  const std::vector<int64_t> lengths = {8, 16, 32, 64, 128};
  sg::manual_seed(0);
  const sg::nn::TransformerEncoderOptions enc{.vocab_size = 32, .max_len = 16};
  const sg::nn::TransformerDecoderOptions dec{.vocab_size = 32, .max_len = lengths.back()};
  sg::nn::EncoderDecoder model(enc, dec);
  model.eval();
  std::vector<int64_t> src_ids(static_cast<size_t>(batch) * 8);
  for (size_t i = 0; i < src_ids.size(); ++i) src_ids[i] = static_cast<int64_t>(4 + i % 28);
  const sg::Tensor src = sg::from_vector(src_ids, {batch, 8});
  std::printf("decoding %d sources at once, %d thread(s), median of %d runs: target tokens per second\n", batch,
              threads, reps);
  std::printf("%8s %14s %14s %8s\n", "length", "cached", "d2l (prefix)", "ratio");
  for (int64_t L : lengths) {
    std::vector<double> cached, d2l;
    for (int r = 0; r <= reps; ++r) {  // run 0 warms up
      const double c = decode_seconds(model, src, L, sg::nn::DecodingMode::cached);
      const double d = decode_seconds(model, src, L, sg::nn::DecodingMode::d2l);
      if (r) cached.push_back(c), d2l.push_back(d);
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double tokens = static_cast<double>(batch * L);
    std::printf("%8lld %14.0f %14.0f %7.2fx\n", static_cast<long long>(L), tokens / median(cached),
                tokens / median(d2l), median(d2l) / median(cached));
  }
  return 0;
}
