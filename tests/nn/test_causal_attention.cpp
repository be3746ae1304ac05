// Masking the future (MultiHeadAttention's and the encoder's `causal` flag):
// changing the tokens after position t leaves every output at positions up
// to t unchanged to the last bit, for every kind of positions, while without
// the mask the same change reaches them. examples/self_attention prints the
// same check.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "autograd/ops/shape.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"
#include "nn/attention.hpp"
#include "nn/positional.hpp"
#include "nn/transformer.hpp"
#include "nn_util.hpp"
#include "test_util.hpp"

using sg::Tensor;
using sg::nn::Positional;

namespace {

// True when rows 0..t of the (B, T, H) float32 outputs a and b are the same bits.
bool same_bits_up_to(const Tensor& a, const Tensor& b, int64_t t) {
  REQUIRE(a.shape() == b.shape());
  const int64_t batch = a.shape()[0], steps = a.shape()[1], h = a.shape()[2];
  const std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  for (int64_t n = 0; n < batch; ++n)
    if (std::memcmp(x.data() + n * steps * h, y.data() + n * steps * h, sizeof(float) * static_cast<size_t>((t + 1) * h)) != 0)
      return false;
  return true;
}

// x: (B, T, H) with the rows after t replaced by those of `other`.
Tensor replace_after(const Tensor& x, const Tensor& other, int64_t t) {
  const int64_t steps = x.shape()[1];
  return sg::concat({sg::slice(x, 1, 0, t + 1), sg::slice(other, 1, t + 1, steps)}, 1);
}

}  // namespace

TEST_CASE("Causal attention: outputs up to t do not see the tokens after t, to the last bit",
          "[nn][attention][causal]") {
  const int64_t batch = 2, steps = 6, H = 8;
  const Tensor x = sg::from_vector(test_util::uniform_values<float>({batch, steps, H}, -1, 1, 110), {batch, steps, H});
  const Tensor other = sg::from_vector(test_util::uniform_values<float>({batch, steps, H}, -2, 2, 111), {batch, steps, H});
  for (Positional kind : {Positional::none, Positional::relative, Positional::rotary, Positional::alibi}) {
    SECTION(sg::nn::positional_name(kind)) {
      sg::manual_seed(112);
      const sg::nn::AttentionPositions positions{.kind = kind, .max_distance = 2};
      sg::nn::MultiHeadAttention causal(H, 2, 0.0, false, true, positions), open(H, 2, 0.0, false, false, positions);
      test_util::randomize(causal, 113);
      open.load_state_dict(causal.state_dict());
      for (int64_t t = 0; t + 1 < steps; ++t) {
        const Tensor changed = replace_after(x, other, t);
        INFO("t = " << t);
        CHECK(same_bits_up_to(causal.forward(x, x, x), causal.forward(changed, changed, changed), t));
        CHECK_FALSE(same_bits_up_to(open.forward(x, x, x), open.forward(changed, changed, changed), t));
      }
      // With padding too: valid_lens masks keys past each sequence as before.
      const Tensor lens = test_util::ids({6, 4}, {batch});
      const Tensor changed = replace_after(x, other, 2);
      CHECK(same_bits_up_to(causal.forward(x, x, x, lens), causal.forward(changed, changed, changed, lens), 2));
    }
  }
}

TEST_CASE("A causal encoder: outputs up to t do not depend on the tokens after t, for every kind of positions",
          "[nn][transformer][causal]") {
  const std::vector<int64_t> a = {1, 3, 5, 2, 6, 4, 2, 2, 5, 1, 3, 6}, b = {4, 2, 6, 1, 1, 5, 3, 6, 1, 4, 4, 2};
  const int64_t batch = 2, steps = 6;
  for (Positional kind : {Positional::none, Positional::sinusoidal, Positional::learned, Positional::relative,
                          Positional::rotary, Positional::alibi}) {
    SECTION(sg::nn::positional_name(kind)) {
      sg::nn::TransformerEncoderOptions o = test_util::tiny_encoder(kind);
      o.causal = true;
      sg::manual_seed(114);
      sg::nn::TransformerEncoder causal(o);
      o.causal = false;
      sg::nn::TransformerEncoder open(o);
      open.load_state_dict(causal.state_dict());
      const Tensor ids = test_util::ids(a, {batch, steps});
      for (int64_t t = 0; t + 1 < steps; ++t) {
        std::vector<int64_t> c = a;
        for (int64_t n = 0; n < batch; ++n)
          for (int64_t s = t + 1; s < steps; ++s) c[static_cast<size_t>(n * steps + s)] = b[static_cast<size_t>(n * steps + s)];
        const Tensor changed = test_util::ids(c, {batch, steps});
        INFO("t = " << t);
        CHECK(same_bits_up_to(causal.forward(ids), causal.forward(changed), t));
        CHECK_FALSE(same_bits_up_to(open.forward(ids), open.forward(changed), t));
      }
    }
  }
}
