// Coursework tools: custom ops (sg::record) and custom modules (nn::Module)
// written outside the library, the graph as Graphviz DOT (sg::to_dot), and
// anomaly mode (sg::AnomalyModeGuard). Every check here has a twin that must
// fail: a deliberately wrong backward, a planted NaN, a freed graph.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/unary.hpp"
#include "autograd/tools/gradcheck.hpp"
#include "autograd/tools/graphviz.hpp"
#include "core/kernels.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"
#include "nn/attention.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Grads;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using test_util::normal;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// A custom op as a student would write it in their own file:
// y = tanh(x) * a.   x: (..., D), a: (D) -> (..., D)
// dy/dx = a (1 - tanh(x)^2); dy/da = tanh(x), summed over x's leading axes.
// `wrong` doubles a's gradient, so the checks below can be seen to fail.
Tensor scaled_tanh(const Tensor& x, const Tensor& a, bool wrong = false) {
  Tensor t = sg::kernel::tanh(x);
  return sg::record("scaled_tanh", sg::kernel::mul(t, a), {x, a}, [x, a, t, wrong](const Tensor& g) -> Grads {
    Tensor dx = x.requires_grad()
                    ? sg::kernel::mul(sg::kernel::mul(g, a), sg::kernel::affine(sg::kernel::mul(t, t), -1.0, 1.0))
                    : Tensor();
    Tensor da = a.requires_grad() ? sg::kernel::sum_to(sg::kernel::mul(g, t), a.shape()) : Tensor();
    if (wrong && da.defined()) da = sg::kernel::affine(da, 2.0, 0.0);
    return {dx, da};
  });
}

// A custom module: a library submodule, a parameter of its own and the op above.
//   x: (..., in) -> (..., out)
class TanhLayer : public sg::nn::Module {
 public:
  TanhLayer(int64_t in, int64_t out, bool wrong = false) : wrong(wrong) {
    fc = register_module("fc", std::make_shared<sg::nn::Linear>(in, out));
    gain = register_parameter("gain", sg::full({out}, 1.5));
  }
  Tensor forward(const Tensor& x) const { return scaled_tanh(fc->forward(x), gain, wrong); }
  std::shared_ptr<sg::nn::Linear> fc;
  Tensor gain;
  bool wrong;
};

// An op whose backward returns NaN: what anomaly mode is for.
Tensor nan_backward(const Tensor& x) {
  return sg::record("nan_backward", sg::kernel::affine(x, 1.0, 0.0), {x},
                    [x](const Tensor&) -> Grads { return {sg::full(x.shape(), kNaN, x.dtype())}; });
}

// ---- a small DOT reader: enough to say the text is well formed ----
struct Dot {
  std::map<std::string, std::string> labels;  // vertex id -> its label, as written
  std::set<std::string> output;               // vertices drawn with a double border
  std::vector<std::pair<std::string, std::string>> edges;
};

// Requires `text` to be one `digraph { ... }` whose every line inside is a
// comment, a default (node/edge [...]), a vertex `id [...]` or an edge
// `id -> id`, with braces balanced outside quoted strings and every edge
// endpoint declared as a vertex.
Dot parse_dot(const std::string& text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '}') {
      depth += c == '{' ? 1 : -1;
      REQUIRE(depth >= 0);
    }
  }
  REQUIRE_FALSE(in_string);
  REQUIRE(depth == 0);

  const std::regex vertex(R"re(^  (t\d+) \[(.*)\];$)re"), edge(R"re(^  (t\d+) -> (t\d+)( \[label="\d+"\])?;$)re"),
      label(R"re(label=("(?:[^"\\]|\\.)*"))re"), defaults(R"(^  (node|edge) \[.*\];$)");
  Dot dot;
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);
  REQUIRE(line == "digraph autograd {");
  bool closed = false;
  while (std::getline(lines, line)) {
    INFO(line);
    REQUIRE_FALSE(closed);
    std::smatch m;
    if (line == "}") {
      closed = true;
    } else if (std::regex_match(line, m, vertex)) {
      const std::string attrs = m[2];
      std::smatch l;
      REQUIRE(std::regex_search(attrs, l, label));
      REQUIRE(dot.labels.emplace(m[1], l[1]).second);  // declared once
      if (attrs.find("peripheries=2") != std::string::npos) dot.output.insert(m[1]);
    } else if (std::regex_match(line, m, edge)) {
      dot.edges.emplace_back(m[1], m[2]);
    } else {
      REQUIRE((line.rfind("  //", 0) == 0 || std::regex_match(line, defaults)));
    }
  }
  REQUIRE(closed);
  for (const auto& [from, to] : dot.edges) {
    INFO(from << " -> " << to);
    REQUIRE(dot.labels.count(from) == 1);
    REQUIRE(dot.labels.count(to) == 1);
  }
  return dot;
}

// The labels of the vertices that have an edge into `id`.
std::multiset<std::string> inputs_of(const Dot& dot, const std::string& id) {
  std::multiset<std::string> out;
  for (const auto& [from, to] : dot.edges)
    if (to == id) out.insert(dot.labels.at(from));
  return out;
}

std::string id_of(const Dot& dot, const std::string& label) {
  for (const auto& [id, l] : dot.labels)
    if (l == label) return id;
  FAIL("no vertex labelled " << label);
  return "";
}

bool graphviz_installed() { return std::system("command -v dot > /dev/null 2>&1") == 0; }

}  // namespace

// ---------------------------------------------------------------------------
// custom ops and modules from user code
// ---------------------------------------------------------------------------

TEST_CASE("a custom op written with record() gradchecks, and its wrong twin fails", "[coursework]") {
  auto fn = [](const Inputs& in) { return scaled_tanh(in[0], in[1]); };
  const Inputs inputs = {normal({3, 4}, 1), normal({4}, 2)};
  const sg::GradcheckResult r = sg::gradcheck(fn, inputs, {.name = "scaled_tanh"});
  INFO(r);
  REQUIRE(r);
  REQUIRE(r.checked == 12 + 4);

  auto wrong = [](const Inputs& in) { return scaled_tanh(in[0], in[1], true); };
  const sg::GradcheckResult w = sg::gradcheck(wrong, inputs, {.name = "scaled_tanh"});
  INFO(w);
  REQUIRE_FALSE(w);
  REQUIRE(w.failed == 4);  // every element of a, none of x
  for (const auto& m : w.mismatches) REQUIRE(m.input == 1);
  REQUIRE_THAT(w.report(), Contains("gradcheck failed for 'scaled_tanh'") && Contains("input 1 (4)"));
}

TEST_CASE("a custom op gives no gradient to an input that does not require it", "[coursework]") {
  Tensor x = normal({2, 3}, 3).set_requires_grad();
  const Tensor a = normal({3}, 4);  // a constant
  sg::backward(sg::sum(scaled_tanh(x, a)));
  REQUIRE(x.grad().defined());
  REQUIRE_FALSE(a.grad().defined());
  // dL/dx = a (1 - tanh(x)^2), by hand.
  const auto xv = x.to_vector<double>(), av = a.to_vector<double>(), gv = x.grad().to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i)
    REQUIRE(gv[i] == Approx(av[i % 3] * (1 - std::tanh(xv[i]) * std::tanh(xv[i]))).epsilon(1e-12));
}

TEST_CASE("a custom module gradchecks by parameter name, and its wrong twin names the parameter",
          "[coursework]") {
  TanhLayer layer(3, 4);
  auto fn = [&](const Inputs& in) { return layer.forward(in[0]); };
  const sg::GradcheckResult r = sg::nn::gradcheck_module(layer, fn, {normal({2, 3}, 5)}, {.name = "TanhLayer"});
  INFO(r);
  REQUIRE(r);
  REQUIRE(r.checked == 6 + 4 + 12 + 4);  // the module's own parameters come before its submodules'
  REQUIRE(r.labels == std::vector<std::string>{"input 0", "gain", "fc.weight", "fc.bias"});

  TanhLayer wrong(3, 4, true);
  auto wrong_fn = [&](const Inputs& in) { return wrong.forward(in[0]); };
  const sg::GradcheckResult w =
      sg::nn::gradcheck_module(wrong, wrong_fn, {normal({2, 3}, 5)}, {.name = "TanhLayer"});
  INFO(w);
  REQUIRE_FALSE(w);
  REQUIRE(w.failed == 4);
  for (const auto& m : w.mismatches) REQUIRE(w.labels[m.input] == "gain");
  REQUIRE_THAT(w.report(), Contains("gain (4), element 0 (0): analytic"));
}

// ---------------------------------------------------------------------------
// to_dot
// ---------------------------------------------------------------------------

TEST_CASE("to_dot draws each op and leaf once, with shapes and parameters by name",
          "[coursework][graphviz]") {
  sg::nn::Linear layer(3, 2);
  const Tensor x = sg::randn({4, 3});
  const Tensor y = sg::sum(sg::tanh(layer.forward(x)));
  sg::nn::NamedTensors names = layer.named_parameters();
  names.emplace_back("x", x);
  const std::string text = sg::to_dot(y, names);
  INFO(text);
  const Dot dot = parse_dot(text);

  // 3 ops (linear, tanh, sum) and 3 leaves; linear reads x, weight and bias.
  REQUIRE(dot.labels.size() == 6);
  REQUIRE(dot.edges.size() == 5);
  const std::string sum = id_of(dot, R"("sum\n() float32")");
  REQUIRE(dot.output == std::set<std::string>{sum});
  const std::string tanh = id_of(dot, R"("tanh\n(4, 2) float32")");
  const std::string linear = id_of(dot, R"("linear\n(4, 2) float32")");
  REQUIRE(inputs_of(dot, sum) == std::multiset<std::string>{R"("tanh\n(4, 2) float32")"});
  REQUIRE(inputs_of(dot, tanh) == std::multiset<std::string>{R"("linear\n(4, 2) float32")"});
  REQUIRE(inputs_of(dot, linear) ==
          std::multiset<std::string>{R"("x\n(4, 3) float32")", R"("weight\n(2, 3) float32")",
                                     R"("bias\n(2) float32")"});
  // Parameters are filled blue, the input (no grad) grey; input positions label the edges.
  REQUIRE_THAT(text, Contains(R"(fillcolor="#cfe2f3", label="weight\n(2, 3) float32")") &&
                         Contains(R"(fillcolor="#eeeeee", label="x\n(4, 3) float32")") &&
                         Contains(id_of(dot, R"("weight\n(2, 3) float32")") + " -> " + linear + R"( [label="1"])"));
  REQUIRE(sg::to_dot(y, names) == text);  // the same text every time
}

TEST_CASE("to_dot draws a tensor used twice once, unnamed leaves by kind, and escapes names",
          "[coursework][graphviz]") {
  Tensor w = sg::randn({2}).set_requires_grad();
  const Tensor c = sg::randn({2});
  const Dot squared = parse_dot(sg::to_dot(sg::mul(w, w) + c));
  REQUIRE(squared.labels.size() == 4);  // add, mul, w, c
  REQUIRE(squared.edges.size() == 4);   // w -> mul twice
  const std::string mul = id_of(squared, R"("mul\n(2) float32")");
  REQUIRE(inputs_of(squared, mul) == std::multiset<std::string>{R"("leaf\n(2) float32")", R"("leaf\n(2) float32")"});
  REQUIRE(id_of(squared, R"("constant\n(2) float32")") != "");

  const std::string quoted = sg::to_dot(sg::tanh(w), {{"my \"w\"\\", w}});
  REQUIRE_THAT(quoted, Contains(R"(label="my \"w\"\\\n(2) float32")"));
  parse_dot(quoted);

  const Dot lone = parse_dot(sg::to_dot(w, {{"w", w}}));  // a leaf alone: one vertex
  REQUIRE(lone.labels.size() == 1);
  REQUIRE(lone.edges.empty());
}

TEST_CASE("to_dot refuses a graph that backward has freed", "[coursework][graphviz]") {
  Tensor w = sg::randn({3}).set_requires_grad();
  Tensor y = sg::sum(sg::exp(w));
  sg::backward(y, Tensor(), /*retain_graph=*/true);
  parse_dot(sg::to_dot(y));  // kept: still drawable
  sg::backward(y);
  REQUIRE_THROWS_WITH(sg::to_dot(y), Contains("to_dot: the graph through 'sum' (output ()) was freed by backward()"));
  REQUIRE_THROWS_WITH(sg::to_dot(Tensor()), Contains("to_dot: the output tensor is undefined"));
}

TEST_CASE("to_dot output renders with Graphviz's dot when it is installed", "[coursework][graphviz]") {
  if (!graphviz_installed()) {
    WARN("Graphviz's dot is not installed (apt-get install graphviz): rendering not checked");
    return;
  }
  sg::nn::MultiHeadAttention attention(8, 2, 0.0);
  const Tensor X = sg::randn({2, 3, 8});
  const std::string text = sg::to_dot(attention.forward(X, X, X), attention.named_parameters());
  const auto dir = std::filesystem::temp_directory_path() / ("smallgrad_dot_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "g.dot") << text;
  const std::string cmd = "dot -Tsvg '" + (dir / "g.dot").string() + "' -o '" + (dir / "g.svg").string() + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream svg(dir / "g.svg");
  const std::string rendered((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(dir);
  REQUIRE_THAT(rendered, Contains("<svg") && Contains("masked_softmax") && Contains("W_q.weight"));
}

// ---------------------------------------------------------------------------
// anomaly mode
// ---------------------------------------------------------------------------

TEST_CASE("anomaly mode names the op whose forward makes a NaN or an infinity", "[coursework][anomaly]") {
  sg::AnomalyModeGuard anomaly;
  Tensor x = sg::from_vector(std::vector<float>{1, -1, 2}, {3}).set_requires_grad();
  REQUIRE_THROWS_WITH(sg::log(x), "anomaly mode: 'log' produced NaN at element 1 (1) of its output (3) float32, "
                                  "from inputs (3) float32, a leaf; every input was finite");
  REQUIRE_THROWS_WITH(sg::sqrt(sg::scalar(-1)), Contains("'sqrt' produced NaN at element 0 ()"));
  REQUIRE_THROWS_WITH(sg::log(sg::zeros({2, 2})), Contains("'log' produced -inf at element 0 (0, 0)"));
  REQUIRE_THROWS_WITH(sg::exp(sg::full({2}, 100.0)), Contains("'exp' produced inf at element 0 (0)"));
  // Deeper in a graph the message says which op made the input.
  REQUIRE_THROWS_WITH(sg::sqrt(x - 1.5), Contains("'sqrt' produced NaN at element 0 (0)") &&
                                             Contains("from inputs (3) float32 made by 'affine'"));
  // A custom op is checked like a library one.
  REQUIRE_THROWS_WITH(scaled_tanh(x, sg::full({3}, kNaN, sg::float32)),
                      Contains("'scaled_tanh' produced NaN") && Contains("input 1 already held NaN at element 0 (0)"));
  // Ops that record nothing are checked too.
  sg::NoGradGuard no_grad;
  REQUIRE_THROWS_WITH(sg::log(x), Contains("'log' produced NaN"));
}

TEST_CASE("anomaly mode names the op whose backward makes a NaN, and the way the gradient came",
          "[coursework][anomaly]") {
  sg::AnomalyModeGuard anomaly;
  Tensor x = normal({2, 3}, 6).set_requires_grad();
  Tensor loss = sg::sum(nan_backward(x) * 2.0);  // finite forward
  REQUIRE_THROWS_WITH(sg::backward(loss),
                      "anomaly mode: the backward of 'nan_backward' returned NaN at element 0 (0, 0) in the "
                      "gradient for its input 0 ((2, 3) float64, a leaf), from a finite gradient of its output "
                      "(2, 3); the forward 'nan_backward' read (2, 3) float64, a leaf; the gradient came from the "
                      "output through 'sum' -> 'affine' -> 'nan_backward'");
  REQUIRE_FALSE(x.grad().defined());  // nothing reached the leaf

  // A NaN made by an op called inside a backward names both.
  auto log_in_backward = [](const Tensor& v) {
    return sg::record("log_in_backward", sg::kernel::affine(v, 1.0, 0.0), {v},
                      [](const Tensor& g) -> Grads { return {sg::log(sg::neg(sg::abs(g)))}; });
  };
  REQUIRE_THROWS_WITH(sg::backward(sg::sum(log_in_backward(x))),
                      Contains("'log' produced NaN") && Contains("(called in the backward of 'log_in_backward')"));
  // ... and once that backward has thrown, a NaN elsewhere no longer blames it.
  REQUIRE_THROWS_WITH(sg::log(sg::scalar(-1)), Contains("'log' produced NaN") && !Contains("called in the backward"));

  // The gradient handed to backward(), and a sum of finite gradients that overflows.
  Tensor y = sg::exp(x);
  REQUIRE_THROWS_WITH(sg::backward(y, sg::full({2, 3}, kNaN, sg::float64)),
                      "anomaly mode: the gradient passed to backward() holds NaN at element 0 (0, 0) of (2, 3) float64");
  // u's node gets two gradients of 3e38 (float32's largest is 3.4e38); the
  // forward stays finite because w is tiny.
  Tensor w = sg::full({3}, 1e-30).set_requires_grad();
  Tensor u = w * 1.0;
  REQUIRE_THROWS_WITH(sg::backward(sg::sum(u * 3e38 + u * 3e38)),
                      Contains("the gradients summed for the output (3) of 'affine' overflowed to inf at element 0 (0)"));
}

TEST_CASE("with anomaly mode off nothing is checked; the guard nests and is per thread", "[coursework][anomaly]") {
  REQUIRE_FALSE(sg::anomaly_mode());
  Tensor x = sg::from_vector(std::vector<float>{1, -1}, {2}).set_requires_grad();
  const Tensor y = sg::log(x);  // no throw: NaN flows on
  REQUIRE(std::isnan(y.to_vector<float>()[1]));
  Tensor z = normal({2}, 7).set_requires_grad();
  sg::backward(sg::sum(nan_backward(z)));
  REQUIRE(std::isnan(z.grad().to_vector<double>()[0]));

  {
    sg::AnomalyModeGuard on;
    REQUIRE(sg::anomaly_mode());
    bool seen_by_other_thread = true;
    std::thread([&] { seen_by_other_thread = sg::anomaly_mode(); }).join();
    REQUIRE_FALSE(seen_by_other_thread);
    {
      sg::AnomalyModeGuard off(false);
      REQUIRE_FALSE(sg::anomaly_mode());
      REQUIRE_NOTHROW(sg::log(x));
    }
    REQUIRE(sg::anomaly_mode());
    REQUIRE_THROWS(sg::log(x));
  }
  REQUIRE_FALSE(sg::anomaly_mode());
  sg::set_anomaly_mode(true);
  const bool on = sg::anomaly_mode();
  sg::set_anomaly_mode(false);
  REQUIRE(on);
}

TEST_CASE("anomaly mode passes a real layer and changes no result", "[coursework][anomaly]") {
  sg::manual_seed(3);
  sg::nn::MultiHeadAttention attention(8, 2, 0.0);
  const Tensor X = sg::randn({2, 3, 8});
  const Tensor lens = sg::from_vector(std::vector<int64_t>{3, 0}, {2});  // a row of length 0: uniform weights
  auto gradients = [&] {
    attention.zero_grad();
    sg::backward(sg::sum(sg::tanh(attention.forward(X, X, X, lens))));
    std::vector<std::vector<float>> g;
    for (const Tensor& p : attention.parameters()) g.push_back(p.grad().to_vector<float>());
    return g;
  };
  const auto plain = gradients();
  sg::AnomalyModeGuard anomaly;
  REQUIRE(gradients() == plain);  // bit for bit
}
