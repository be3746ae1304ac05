// Built against the installed package only: one include, one target. Besides
// using the library, it extends it as a student's project would, with no
// change to the library: a custom op (sg::record) and a custom module
// (sg::nn::Module), both gradchecked; then the GPT, its BPE tokenizer,
// model files with checksums and sampling, all from the same header.
#include <smallgrad.hpp>

#include <cmath>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>

namespace {

// softsign: y = x / (1 + |x|), dy/dx = 1 / (1 + |x|)^2.   x: any shape -> same
sg::Tensor softsign(const sg::Tensor& x) {
  sg::Tensor denominator = sg::kernel::affine(sg::kernel::abs(x), 1.0, 1.0);  // 1 + |x|
  return sg::record("softsign", sg::kernel::div(x, denominator), {x}, [denominator](const sg::Tensor& g) -> sg::Grads {
    return {sg::kernel::div(g, sg::kernel::mul(denominator, denominator))};
  });
}

// y = softsign(x W^T + b) * gain: a library Linear inside, a parameter of its own.
//   x: (..., in) -> (..., out)
class SoftsignLayer : public sg::nn::Module {
 public:
  SoftsignLayer(int64_t in, int64_t out) {
    linear = register_module("linear", std::make_shared<sg::nn::Linear>(in, out));
    gain = register_parameter("gain", sg::full({out}, 2.0));
  }
  sg::Tensor forward(const sg::Tensor& x) const { return softsign(linear->forward(x)) * gain; }
  std::shared_ptr<sg::nn::Linear> linear;
  sg::Tensor gain;
};

// The newer API through the same one header: a GPT on byte-level BPE
// tokens, two AdamW steps, its weights saved and loaded back (checksummed,
// apart from the optimizer's state), and a sample from the loaded model.
int gpt_on_bpe() {
  const std::string text = "the cat sat on the mat; the cat ate the rat. the end of the tale of the cat.";
  const sg::text::BpeTokenizer tok = sg::text::BpeTokenizer::train(text, 270);
  const std::vector<int64_t> ids = tok.encode(text);
  if (tok.decode(ids) != text) {
    std::cerr << "BPE did not round-trip\n";
    return 1;
  }
  const int64_t T = 8;
  if (static_cast<int64_t>(ids.size()) < T + 1) {
    std::cerr << "too few tokens: " << ids.size() << "\n";
    return 1;
  }
  sg::manual_seed(1);
  const sg::nn::GPTOptions options{
      .vocab_size = tok.vocab_size(), .block_size = T, .n_layer = 1, .n_head = 2, .n_embd = 16};
  sg::nn::GPT model(options);
  sg::optim::AdamW opt(model.parameters(), {.lr = 1e-2});
  const sg::Tensor x = sg::from_vector(std::vector<int64_t>(ids.begin(), ids.begin() + T), {1, T});
  const sg::Tensor y = sg::from_vector(std::vector<int64_t>(ids.begin() + 1, ids.begin() + T + 1), {1, T});
  double first = 0, second = 0;
  for (int step = 0; step < 2; ++step) {
    opt.zero_grad();
    const sg::Tensor loss = sg::cross_entropy(model.forward(x), y);
    sg::backward(loss);
    opt.step();
    (step == 0 ? first : second) = loss.item<double>();
  }
  if (!(second < first)) {
    std::cerr << "two GPT steps did not lower the loss: " << first << " then " << second << "\n";
    return 1;
  }
  const std::string dir = std::filesystem::temp_directory_path().string();
  const std::string weights = dir + "/consumer_gpt_model.safetensors", state = dir + "/consumer_gpt_state.safetensors";
  sg::checkpoint::save(weights, model, nullptr, {{"tokenizer", tok.to_json()}});
  sg::checkpoint::save_training_state(state, opt);
  sg::nn::GPT loaded(options);
  const sg::checkpoint::Metadata meta = sg::checkpoint::load(weights, loaded);
  const bool checksummed = sg::checkpoint::load_safetensors(weights).checksummed;
  sg::optim::AdamW opt2(loaded.parameters(), {.lr = 1e-2});
  sg::checkpoint::load_training_state(state, opt2);
  std::filesystem::remove(weights);
  std::filesystem::remove(state);
  const std::unique_ptr<sg::text::Tokenizer> tok2 = sg::text::tokenizer_from_json(meta.at("tokenizer"));
  loaded.eval();
  sg::Generator gen(7);
  const std::vector<int64_t> sample =
      sg::decoding::generate(loaded, tok2->encode("the "), {.max_new_tokens = 12, .top_k = 10}, gen);
  std::cout << "consumer GPT on BPE: loss " << first << " -> " << second << ", checksummed " << checksummed
            << ", sample: " << tok2->decode(sample) << "\n";
  return checksummed && sample.size() == tok2->encode("the ").size() + 12 ? 0 : 1;
}

int run() {
  sg::Tensor w = sg::randn({3, 2}).set_requires_grad();
  sg::Tensor x = sg::ones({4, 3});
  sg::Tensor loss = sg::sum(sg::matmul(x, w));
  sg::backward(loss);
  // d sum(x w) / dw = x^T 1 = 4 everywhere.
  for (float g : w.grad().to_vector<float>())
    if (std::fabs(g - 4.0f) > 1e-5f) {
      std::cerr << "unexpected gradient " << g << "\n";
      return 1;
    }
  std::cout << "consumer ok: loss " << loss.item<double>() << ", BLIS kernels " << sg::blis_kernels()
            << "\n";

  auto op_fn = [](const std::vector<sg::Tensor>& in) { return softsign(in[0]); };
  const sg::GradcheckResult op = sg::gradcheck(op_fn, {sg::randn({3, 4})}, {.name = "softsign"});
  SoftsignLayer layer(3, 2);
  auto layer_fn = [&](const std::vector<sg::Tensor>& in) { return layer.forward(in[0]); };
  const sg::GradcheckResult module =
      sg::nn::gradcheck_module(layer, layer_fn, {sg::randn({4, 3})}, {.name = "SoftsignLayer"});
  std::cout << op << "\n" << module << "\n";
  if (!(op && module && module.checked == 12 + 2 + 6 + 2)) return 1;
  return gpt_on_bpe();
}

}  // namespace

// Every exception ends the program with one line and exit status 1.
int main() {
  try {
    return run();
  } catch (const std::exception& e) {
    std::cerr << "consumer: " << e.what() << "\n";
    return 1;
  }
}
