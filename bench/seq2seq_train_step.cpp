// The encoder-decoder's training step, timed: teacher-forced forward of
// nn::EncoderDecoder (d2l 11.7, post-norm, sinusoidal positions), d2l's
// Seq2Seq loss (nn::sequence_loss), backward, and an Adam update, on fixed
// token ids. bench/torch_seq2seq_step.py is the same step with d2l's PyTorch
// classes; bench/compare_seq2seq_step.py runs both side by side.
//
//   build/release/bench/seq2seq_train_step [--config translate|d2l|all] [--threads N]
//                                          [--steps N] [--warmup N] [--dropout P]
//
// The configurations (encoder and decoder of the same width; 2 + 2 blocks):
//   translate  examples/translate_numbers: batch 64, source and target 12
//              tokens, vocabularies 34 and 31, width 64, FFN 128, 4 heads
//   d2l        d2l 11.7's English-French run: batch 128, 9 tokens,
//              vocabularies of 200, width 256, FFN 64, 4 heads
// Sources have valid lengths from the full length down to half of it
// (row b: S - b mod (S / 2)); labels are padded (0) after a row's own
// length (T - b mod (T / 2)), so the loss's mask counts. The same formulas
// are in the PyTorch script. On more than one thread the whole batch is one
// graph with each op's loops spread over the threads.
// Prints one line per configuration: median milliseconds per step, target
// tokens per second, peak resident memory, the last loss.
#include <smallgrad.hpp>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Config {
  const char* name;
  int64_t batch, src_len, tgt_len, src_vocab, tgt_vocab, hidden, ffn, heads, blocks;
};

const Config kConfigs[] = {
    {"translate", 64, 12, 12, 34, 31, 64, 128, 4, 2},
    {"d2l", 128, 9, 9, 200, 200, 256, 64, 4, 2},
};

// (B, T) ids: row b's first `length(b)` tokens from a fixed pattern in [3, V), then padding 0.
sg::Tensor pattern_ids(int64_t batch, int64_t steps, int64_t vocab, int64_t salt, bool pad) {
  std::vector<int64_t> v(static_cast<size_t>(batch * steps));
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = pad ? steps - b % (steps / 2) : steps;
    for (int64_t t = 0; t < steps; ++t)
      v[static_cast<size_t>(b * steps + t)] = t < len ? 3 + (b * 7 + t * 13 + salt) % (vocab - 3) : 0;
  }
  return sg::from_vector(v, {batch, steps});
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

void run(const Config& c, int steps, int warmup, double dropout) {
  sg::manual_seed(0);
  const sg::nn::TransformerEncoderOptions enc{.vocab_size = c.src_vocab, .num_hiddens = c.hidden,
                                              .ffn_num_hiddens = c.ffn, .num_heads = c.heads,
                                              .num_blocks = c.blocks, .dropout = dropout};
  const sg::nn::TransformerDecoderOptions dec{.vocab_size = c.tgt_vocab, .num_hiddens = c.hidden,
                                              .ffn_num_hiddens = c.ffn, .num_heads = c.heads,
                                              .num_blocks = c.blocks, .dropout = dropout};
  sg::nn::EncoderDecoder model(enc, dec);
  model.train();
  sg::optim::Adam opt(model.parameters(), {.lr = 1e-3});
  const sg::Tensor src = pattern_ids(c.batch, c.src_len, c.src_vocab, 0, true);
  const sg::Tensor labels = pattern_ids(c.batch, c.tgt_len, c.tgt_vocab, 5, true);
  std::vector<int64_t> dec_in(static_cast<size_t>(c.batch * c.tgt_len));  // <bos> (1), then the labels but the last
  const std::vector<int64_t> l = labels.to_vector<int64_t>();
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t t = 0; t < c.tgt_len; ++t)
      dec_in[static_cast<size_t>(b * c.tgt_len + t)] = t == 0 ? 1 : l[static_cast<size_t>(b * c.tgt_len + t - 1)];
  const sg::Tensor dec_input = sg::from_vector(dec_in, {c.batch, c.tgt_len});
  std::vector<int64_t> lens(static_cast<size_t>(c.batch));
  for (int64_t b = 0; b < c.batch; ++b) lens[static_cast<size_t>(b)] = c.src_len - b % (c.src_len / 2);
  const sg::Tensor src_lens = sg::from_vector(lens, {c.batch});
  std::vector<double> times;
  double loss_value = 0;
  for (int s = 0; s < warmup + steps; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    const sg::Tensor loss = sg::nn::sequence_loss(model.forward(src, dec_input, src_lens), labels, 0);
    opt.zero_grad();
    sg::backward(loss);
    opt.step();
    loss_value = loss.item<double>();
    if (s >= warmup) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double ms = median(times) * 1e3;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("%-9s threads %d  %9.3f ms/step  %10.0f tokens/s  peak RSS %ld MiB  loss %.4f\n", c.name,
              sg::num_threads(), ms, c.batch * c.tgt_len / (ms * 1e-3), usage.ru_maxrss / 1024, loss_value);
  std::fflush(stdout);
}

int usage(const char* argv0, int status) {
  std::fprintf(status ? stderr : stdout,
               "usage: %s [--config translate|d2l|all] [--threads N] [--steps N] [--warmup N] [--dropout P]\n",
               argv0);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config = "all";
  int threads = 1, steps = 30, warmup = 3;
  double dropout = 0.1;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") return usage(argv[0], 0);
    if (i + 1 >= argc) return usage(argv[0], 2);
    const std::string value = argv[++i];
    char* end = nullptr;
    if (flag == "--config") {
      config = value;
    } else if (flag == "--dropout") {
      dropout = std::strtod(value.c_str(), &end);
      if (*end || !(dropout >= 0 && dropout < 1)) return usage(argv[0], 2);
    } else if (flag == "--threads" || flag == "--steps" || flag == "--warmup") {
      const long v = std::strtol(value.c_str(), &end, 10);
      if (*end || value.empty() || v < (flag == "--warmup" ? 0 : 1) || v > 100000) return usage(argv[0], 2);
      (flag == "--threads" ? threads : flag == "--steps" ? steps : warmup) = static_cast<int>(v);
    } else {
      return usage(argv[0], 2);
    }
  }
  sg::set_num_threads(threads);
  bool any = false;
  for (const Config& c : kConfigs)
    if (config == "all" || config == c.name) run(c, steps, warmup, dropout), any = true;
  return any ? 0 : usage(argv[0], 2);
}
