// Samples text from a GPT that train_gpt trained: the prompt, then
// --max-new-tokens tokens, each drawn from the model's next-token
// distribution (temperature, top-k, top-p), seeded, one at a time through
// the key/value cache (--no-cache recomputes the whole context each time,
// as nanoGPT's sample.py does; both give the same tokens). nanoGPT's
// sample.py defaults: temperature 0.8, top-k 200, seed 1337.
//
//   sample_gpt --prompt "And God said"
//   sample_gpt --load out/gpt --num-samples 3 --temperature 1.0 --top-p 0.9
#include <chrono>
#include <iostream>

#include "cli.hpp"
#include "decoding/sampling.hpp"
#include "gpt/gpt_files.hpp"

int main(int argc, char** argv) {
  examples::Flags flags{"Samples text from a checkpoint of train_gpt."};
  std::string load = "out/gpt", prompt = "\n";
  int64_t max_new_tokens = 500, num_samples = 1, top_k = 200, seed = 1337;
  double temperature = 0.8, top_p = 1.0;
  bool no_cache = false, timing = false;
  int threads = 0;
  flags.text("--load", load, "the folder train_gpt wrote (its model.safetensors), or a model file");
  flags.text("--prompt", prompt, "the text to continue");
  flags.whole("--max-new-tokens", max_new_tokens, "tokens to sample per sample", 0, 1000000);
  flags.whole("--num-samples", num_samples, "samples, one after another from one generator", 1, 1000);
  flags.number("--temperature", temperature, "divides the logits (0: always the most probable token)", 0, true, 100);
  flags.whole("--top-k", top_k, "keep the k most probable tokens (0: all)", 0, 10000000);
  flags.number("--top-p", top_p, "keep the most probable tokens up to this probability (1: all)", 0, false, 1);
  flags.whole("--seed", seed, "the sampling generator's seed", 0, INT64_MAX);
  flags.flag("--no-cache", no_cache, "recompute the whole context for every token (no key/value cache)");
  flags.flag("--timing", timing, "print tokens per second on stderr");
  flags.threads(threads);
  return examples::run(flags, argc, argv, [&] {
    examples::apply_threads(threads);
    const std::string path = examples::gpt::find_model(load, "--load");
    const examples::gpt::Loaded l = examples::gpt::load_for_sampling(path);
    std::vector<int64_t> ids;
    try {
      ids = l.tokenizer->encode(prompt);
    } catch (const sg::Error& e) {
      sg::fail("--prompt: ", e.what());
    }
    if (ids.empty()) throw examples::UsageError("--prompt is empty: give at least one character");
    sg::Generator gen(static_cast<uint64_t>(seed));
    const sg::decoding::SamplingOptions options{.max_new_tokens = max_new_tokens, .temperature = temperature,
                                                .top_k = top_k, .top_p = top_p, .use_cache = !no_cache};
    for (int64_t k = 0; k < num_samples; ++k) {
      if (k > 0) std::cout << "\n---------------\n";
      examples::set_stop_note("sample " + std::to_string(k + 1) + " was cut after 0 of " +
                              std::to_string(max_new_tokens) + " tokens");
      std::cout << prompt << std::flush;
      std::vector<int64_t> pending;  // BPE tokens can split a UTF-8 character: written when whole
      const auto start = std::chrono::steady_clock::now();
      int64_t drawn = 0;
      sg::decoding::generate(*l.model, ids, options, gen, [&](int64_t id) {
        examples::set_stop_note("sample " + std::to_string(k + 1) + " was cut after " + std::to_string(drawn) + " of " +
                                std::to_string(max_new_tokens) + " tokens");
        examples::check_stop();
        ++drawn;
        pending.push_back(id);
        const std::string text = l.tokenizer->decode(pending);
        const auto last = static_cast<unsigned char>(text.back());
        if (last < 0x80 || (last & 0xc0) != 0x80 || text.size() >= 4) std::cout << text << std::flush, pending.clear();
      });
      if (!pending.empty()) std::cout << l.tokenizer->decode(pending);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::cout << std::endl;
      if (timing)
        std::cerr << max_new_tokens << " tokens in " << seconds << " s: " << static_cast<double>(max_new_tokens) / seconds
                  << " tokens/s (" << (no_cache ? "no cache" : "key/value cache") << ")\n";
    }
    return 0;
  });
}
