// Helpers for coursework: gradcheck_module gives the module back as it was
// and its failing report names the wrong parameter at a glance; the
// plotter's files are written whole; training stops cleanly and refuses
// configs with nothing to learn; checkpoints with non-finite weights are refused.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/tools/gradcheck.hpp"
#include "core/kernels.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"
#include "checkpoint/checkpoint.hpp"
#include "study/encoder_training.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"
#include "study/plot.hpp"

using Catch::Contains;

namespace {

// y = x * scale + shift, whose backward doubles the gradient of `shift` only.
class ScaleShift : public sg::nn::Module {
 public:
  ScaleShift() {
    scale = register_parameter("scale", sg::full({3}, 1.5));
    shift = register_parameter("shift", sg::full({3}, 0.25));
  }
  sg::Tensor forward(const sg::Tensor& x) const {
    const sg::Tensor scaled = x * scale;
    const sg::Tensor y = sg::kernel::add(scaled.detach(), shift.detach());
    const sg::Tensor b = shift;
    return sg::record("wrong_shift", y, {scaled, b}, [](const sg::Tensor& g) -> sg::Grads {
      return {g, sg::kernel::affine(sg::kernel::sum(g, 0), 2.0, 0.0)};  // should be 1.0
    });
  }
  sg::Tensor scale, shift;
};

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("gradcheck_module gives the module back in its dtype, values unchanged", "[coursework]") {
  sg::nn::Linear layer(3, 2);
  const std::vector<float> before = layer.weight.to_vector<float>();
  auto fn = [&](const std::vector<sg::Tensor>& in) { return layer.forward(in[0]); };
  REQUIRE(sg::nn::gradcheck_module(layer, fn, {sg::randn({4, 3})}));
  REQUIRE(layer.weight.dtype() == sg::float32);
  REQUIRE(layer.bias.dtype() == sg::float32);
  REQUIRE(layer.weight.to_vector<float>() == before);
  // The next float32 forward works, as before the check.
  REQUIRE(layer.forward(sg::randn({4, 3})).dtype() == sg::float32);

  // Also when fn throws in the middle of the check.
  auto bad = [&](const std::vector<sg::Tensor>&) -> sg::Tensor { sg::fail("fn: deliberately broken"); };
  REQUIRE_THROWS_WITH(sg::nn::gradcheck_module(layer, bad, {sg::randn({4, 3})}), Contains("deliberately"));
  REQUIRE(layer.weight.dtype() == sg::float32);
  REQUIRE(layer.weight.to_vector<float>() == before);
}

TEST_CASE("a failing gradcheck_module report starts with a line per parameter", "[coursework]") {
  ScaleShift m;
  auto fn = [&](const std::vector<sg::Tensor>& in) { return m.forward(in[0]); };
  const sg::GradcheckResult r = sg::nn::gradcheck_module(m, fn, {sg::randn({4, 3})}, {.name = "ScaleShift"});
  INFO(r);
  REQUIRE_FALSE(r);
  REQUIRE(r.per_input.size() == 3);  // input 0, scale, shift
  REQUIRE(r.per_input[0].failed == 0);
  REQUIRE(r.per_input[1].failed == 0);
  REQUIRE(r.per_input[2].failed == 3);
  REQUIRE(r.per_input[2].checked == 3);
  REQUIRE(r.per_input[0].checked == 12);
  REQUIRE(r.per_input[2].max_error > 1);
  const std::string report = r.report();
  // The summary lines come before any element, one per input or parameter.
  const size_t shift_line = report.find("FAIL shift");
  REQUIRE(shift_line != std::string::npos);
  REQUIRE(report.find("ok   input 0") < shift_line);
  REQUIRE(report.find("ok   scale") < shift_line);
  REQUIRE_THAT(report, Contains("FAIL shift   (3): 3 checked, 3 failed, worst error"));
  REQUIRE(report.find("first mismatches") > shift_line);
}

TEST_CASE("plot::write_file replaces a file whole and leaves nothing behind when it cannot", "[plot]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("sg-write-file-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "a.svg").string();
  sg::study::plot::write_file(path, "first");
  sg::study::plot::write_file(path, "second, longer");
  REQUIRE(read(path) == "second, longer");
  fs::create_directories(dir / "taken.svg");  // a folder where the file should go
  REQUIRE_THROWS_WITH(sg::study::plot::write_file((dir / "taken.svg").string(), "x"), Contains("taken.svg"));
  REQUIRE_THROWS_WITH(sg::study::plot::write_file((dir / "missing" / "b.svg").string(), "x"), Contains("b.svg"));
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  REQUIRE(files == 1);  // a.svg only: no temporary left
  fs::remove_all(dir);
}

TEST_CASE("training stops at the next step when asked, and refuses a shift with nothing to learn", "[training]") {
  sg::study::Config c;
  c.steps = 50;
  c.eval_every = 10;
  sg::manual_seed(0);
  sg::study::Model model(c);
  std::atomic<bool> stop{true};
  REQUIRE_THROWS_WITH(sg::study::train(model, c, nullptr, &stop), Contains("stopped before step 1 of 50"));
  c.shift = 12;  // = max_len: no training position would be labelled
  REQUIRE_THROWS_WITH(sg::study::check_config(c), Contains("--shift 12 must be less than --max-len 12"));
  c.task = "sort";  // shift does not matter for the other tasks
  REQUIRE_NOTHROW(sg::study::check_config(c));
}

TEST_CASE("load_checkpoint refuses a NaN or an infinity in a weight, naming the tensor", "[checkpoint]") {
  namespace fs = std::filesystem;
  const std::string path =
      (fs::temp_directory_path() / ("sg-nan-" + std::to_string(::getpid()) + ".safetensors")).string();
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    sg::nn::Linear saved(3, 2);
    {
      sg::NoGradGuard no_grad;
      saved.bias.data<float>()[1] = static_cast<float>(bad);
    }
    sg::checkpoint::save(path, saved);
    sg::nn::Linear loaded(3, 2);
    const std::vector<float> before = loaded.weight.to_vector<float>();
    REQUIRE_THROWS_WITH(sg::checkpoint::load(path, loaded),
                        Contains("tensor 'bias' (2)") && Contains("at element 1") && Contains(path));
    REQUIRE(loaded.weight.to_vector<float>() == before);  // nothing changed
  }
  std::remove(path.c_str());
}
