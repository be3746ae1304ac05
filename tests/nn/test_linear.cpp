// nn::Linear (nn/linear.cpp), gradchecked through gradcheck_module.
#include <catch2/catch.hpp>

#include "core/random.hpp"
#include "core/tensor.hpp"
#include "nn/linear.hpp"

#include <cmath>
#include <functional>
#include <string>

#include "nn_util.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using namespace test_util;

// ---------------------------------------------------------------------------
// gradcheck, layer by layer
// ---------------------------------------------------------------------------

TEST_CASE("Linear gradchecks with and without bias", "[nn][gradcheck]") {
  sg::manual_seed(1);
  for (bool bias : {true, false}) {
    sg::nn::Linear layer(3, 4, bias);
    REQUIRE(names_of(layer.named_parameters()) ==
            (bias ? std::vector<std::string>{"weight", "bias"} : std::vector<std::string>{"weight"}));
    auto fn = [&](const Inputs& in) { return layer.forward(in[0]); };
    // A 3-D input: the 2-D weight broadcasts over the batch axis.
    check_module(bias ? "Linear" : "Linear (no bias)", layer, fn, {normal({2, 5, 3}, 2)});
  }
}
