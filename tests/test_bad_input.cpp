// Bad inputs, table-driven: every row calls one op or layer the wrong way and
// names the fragments its sg::Error must contain: the op (or layer) and the
// shapes or values that are wrong, so a student can fix the call from the
// message alone. A row fails when nothing is thrown, when something other
// than sg::Error is thrown, or when a fragment is missing from the message.
//
// To add a case: add a row to the table of its family. Rows build their
// inputs inside the callable, so one row cannot disturb another.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/cross_entropy.hpp"
#include "autograd/ops/dropout.hpp"
#include "autograd/ops/embedding.hpp"
#include "autograd/ops/gelu.hpp"
#include "autograd/ops/layer_norm.hpp"
#include "autograd/ops/matmul.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/shape.hpp"
#include "autograd/ops/softmax.hpp"
#include "autograd/ops/unary.hpp"
#include "core/kernels.hpp"
#include "core/tensor.hpp"
#include "nn/attention.hpp"
#include "nn/basic.hpp"
#include "nn/linear.hpp"
#include "nn/loss.hpp"
#include "optim/optim.hpp"
#include "nn/positional.hpp"
#include "nn/transformer.hpp"

using namespace sg;

namespace {

struct Row {
  std::string what;            // the mistake, shown when the row fails
  std::function<void()> call;  // makes it
  std::vector<std::string> expect;  // fragments the message must contain
};

// Runs every row of a table, checking each one on its own.
void run_table(const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    INFO("row: " << row.what);
    std::string message;
    bool threw_error = false;
    try {
      row.call();
    } catch (const sg::Error& e) {
      threw_error = true;
      message = e.what();
    } catch (const std::exception& e) {
      FAIL_CHECK("threw a std::exception that is not sg::Error: " << e.what());
      continue;
    }
    if (!threw_error) {
      FAIL_CHECK("no exception");
      continue;
    }
    INFO("message: " << message);
    for (const std::string& fragment : row.expect) {
      INFO("missing: " << fragment);
      CHECK(message.find(fragment) != std::string::npos);
    }
  }
}

// Small inputs. f(...) is float32, d(...) float64, ids(...) int64.
Tensor f(const Shape& s) { return ones(s); }
Tensor d(const Shape& s) { return ones(s, float64); }
Tensor ids(std::vector<int64_t> v, const Shape& s) { return from_vector(v, s); }
Tensor grad_leaf(const Shape& s) { return ones(s).set_requires_grad(); }

}  // namespace

TEST_CASE("shape mismatches name the op and every shape", "[bad_input]") {
  const std::vector<Row> rows = {
      {"add: shapes that do not broadcast", [] { add(f({2, 3}), f({4})); }, {"add", "(2, 3)", "(4)"}},
      {"sub: shapes that do not broadcast", [] { sub(f({2, 3}), f({2, 2})); }, {"sub", "(2, 3)", "(2, 2)"}},
      {"mul: shapes that do not broadcast", [] { mul(f({3, 1, 4}), f({2, 5})); }, {"mul", "(3, 1, 4)", "(2, 5)"}},
      {"div: shapes that do not broadcast", [] { div(f({5}), f({6})); }, {"div", "(5)", "(6)"}},
      {"operator+ on tensors", [] { (void)(f({2}) + f({3})); }, {"add", "(2)", "(3)"}},
      {"matmul: inner dimensions differ", [] { matmul(f({2, 3}), f({4, 5})); },
       {"matmul", "(2, 3)", "(4, 5)", "3", "4"}},
      {"matmul: inner dimensions differ after transpose_b", [] { matmul(f({2, 3}), f({3, 5}), false, true); },
       {"matmul", "(2, 3)", "(3, 5)"}},
      {"matmul: batch dimensions that do not broadcast", [] { matmul(f({2, 3, 4}), f({5, 4, 2})); },
       {"matmul", "(2)", "(5)"}},
      {"matmul: a vector", [] { matmul(f({3}), f({3, 2})); }, {"matmul", "(3)", "(3, 2)"}},
      {"concat: sizes differ outside the axis", [] { concat({f({2, 3}), f({2, 4})}, 0); },
       {"concat", "(2, 3)", "(2, 4)", "axis 0"}},
      {"concat: ranks differ", [] { concat({f({2, 3}), f({2, 3, 1})}, 1); }, {"concat", "(2, 3)", "(2, 3, 1)"}},
      {"concat: nothing to join", [] { concat({}, 0); }, {"concat", "no tensors"}},
      {"layer_norm: gamma of the wrong size", [] { layer_norm(f({2, 4}), f({3}), f({4})); },
       {"layer_norm", "gamma (3)", "(2, 4)"}},
      {"layer_norm: beta of the wrong size", [] { layer_norm(f({2, 4}), f({4}), f({4, 1})); },
       {"layer_norm", "beta (4, 1)", "(2, 4)"}},
      {"cross_entropy: targets do not match the logits", [] { cross_entropy(f({2, 3, 5}), ids({0, 1, 2, 3}, {2, 2})); },
       {"cross_entropy", "(2, 2)", "(2, 3, 5)"}},
      {"cross_entropy: scalar logits", [] { cross_entropy(f({}), ids({0}, {})); }, {"cross_entropy", "()"}},
      {"embedding: weight is not (vocab, dim)", [] { embedding(f({4}), ids({0, 1}, {2})); }, {"embedding", "(4)"}},
      {"embedding: weight of rank 3", [] { embedding(f({4, 2, 2}), ids({0}, {1})); }, {"embedding", "(4, 2, 2)"}},
      {"reshape: element counts differ", [] { reshape(f({2, 3}), {4, 2}); }, {"reshape", "(2, 3)", "(4, 2)"}},
      {"reshape: -1 cannot be inferred", [] { reshape(f({2, 3}), {4, -1}); }, {"reshape", "(2, 3)", "(4, -1)"}},
      {"reshape: two -1", [] { reshape(f({2, 3}), {-1, -1}); }, {"reshape", "(2, 3)", "(-1, -1)"}},
      {"permute: too few axes", [] { permute(f({2, 3, 4}), {1, 0}); }, {"permute", "2 axes", "(2, 3, 4)"}},
      {"permute: a repeated axis", [] { permute(f({2, 3, 4}), {0, 2, 0}); },
       {"permute", "axis 0 repeated", "(0, 2, 0)", "(2, 3, 4)"}},
      {"slice: end past the size", [] { slice(f({2, 5}), 1, 3, 7); }, {"slice", "[3, 7)", "axis 1", "(2, 5)"}},
      {"slice: start after end", [] { slice(f({2, 5}), 1, 4, 2); }, {"slice", "[4, 2)", "(2, 5)"}},
      {"slice: negative start", [] { slice(f({4}), 0, -1, 2); }, {"slice", "[-1, 2)", "(4)"}},
      {"sum: axis past the rank", [] { sum(f({2, 3}), 2); }, {"sum", "axis 2", "(2, 3)"}},
      {"MultiHeadAttention: keys and values differ",
       [] { nn::MultiHeadAttention(8, 2, 0).forward(f({2, 3, 8}), f({2, 4, 8}), f({2, 5, 8})); },
       {"MultiHeadAttention", "(2, 3, 8)", "(2, 4, 8)", "(2, 5, 8)"}},
      {"MultiHeadAttention: width is not num_hiddens",
       [] { nn::MultiHeadAttention(8, 2, 0).forward(f({2, 3, 6}), f({2, 3, 6}), f({2, 3, 6})); },
       {"MultiHeadAttention", "(2, 3, 6)", "8"}},
      {"Linear: input does not end in in_features", [] { nn::Linear(4, 2).forward(f({3, 5})); },
       {"Linear", "(3, 5)", "4"}},
      {"AddNorm: X and Y differ", [] { nn::AddNorm(4, 0).forward(f({2, 4}), f({3, 4})); },
       {"AddNorm", "(2, 4)", "(3, 4)"}},
      {"TransformerEncoder: ids not (batch, steps)",
       [] {
         nn::TransformerEncoder enc({.vocab_size = 5, .num_hiddens = 8, .ffn_num_hiddens = 8, .num_heads = 2,
                                     .num_blocks = 1, .dropout = 0});
         enc.forward(ids({1, 2, 3}, {3}));
       },
       {"TransformerEncoder", "(3)"}},
      {"mse_loss: prediction and target differ", [] { nn::mse_loss(f({2, 3}), f({3, 2})); },
       {"mse_loss", "(2, 3)", "(3, 2)"}},
  };
  run_table(rows);
}

TEST_CASE("wrong dtypes name the op, the dtype and the shape", "[bad_input]") {
  const std::vector<Row> rows = {
      {"exp of int64", [] { sg::exp(arange(4)); }, {"exp", "int64", "(4)"}},
      {"log of int64", [] { sg::log(arange(4)); }, {"log", "int64", "(4)"}},
      {"tanh of int64", [] { sg::tanh(ids({1, 2}, {1, 2})); }, {"tanh", "int64", "(1, 2)"}},
      {"sigmoid of int64", [] { sigmoid(arange(3)); }, {"sigmoid", "int64", "(3)"}},
      {"sqrt of int64", [] { sg::sqrt(arange(3)); }, {"sqrt", "int64", "(3)"}},
      {"pow of int64", [] { sg::pow(arange(3), 2.0); }, {"pow", "int64", "(3)"}},
      {"gelu of int64", [] { gelu(arange(3)); }, {"gelu", "int64", "(3)"}},
      {"div of int64", [] { div(arange(3), arange(3)); }, {"div", "int64", "(3)"}},
      {"mean of int64", [] { mean(arange(3)); }, {"mean", "int64", "(3)"}},
      {"mean of int64 along an axis", [] { mean(ids({1, 2}, {1, 2}), 1); }, {"mean", "int64", "(1, 2)"}},
      {"softmax of int64", [] { softmax(ids({1, 2}, {1, 2})); }, {"softmax", "int64", "(1, 2)"}},
      {"log_softmax of int64", [] { log_softmax(ids({1, 2}, {1, 2})); }, {"log_softmax", "int64", "(1, 2)"}},
      {"matmul of int64", [] { matmul(ids({1, 2, 3, 4}, {2, 2}), ids({1, 2, 3, 4}, {2, 2})); },
       {"matmul", "int64", "(2, 2)"}},
      {"matmul of float32 by float64", [] { matmul(f({2, 2}), d({2, 2})); }, {"matmul", "float32", "float64"}},
      {"add of float32 and float64", [] { add(f({2}), d({2})); }, {"add", "float32", "float64"}},
      {"sub of float32 and float64", [] { sub(f({2}), d({2})); }, {"sub", "float32", "float64"}},
      {"layer_norm of int64", [] { layer_norm(ids({1, 2}, {1, 2}), f({2}), f({2})); },
       {"layer_norm", "int64", "(1, 2)"}},
      {"layer_norm with float64 gamma", [] { layer_norm(f({1, 2}), d({2}), f({2})); },
       {"layer_norm", "float32", "float64"}},
      {"dropout of int64", [] { dropout(arange(4), 0.5, true); }, {"dropout", "int64", "(4)"}},
      {"masked_softmax of int64 scores", [] { masked_softmax(zeros({1, 2, 2}, int64), Tensor()); },
       {"masked_softmax", "int64", "(1, 2, 2)"}},
      {"cross_entropy: float targets", [] { cross_entropy(f({2, 3}), f({2})); },
       {"cross_entropy", "int64", "float32", "(2)"}},
      {"cross_entropy: int64 logits", [] { cross_entropy(zeros({2, 3}, int64), ids({0, 1}, {2})); },
       {"cross_entropy", "int64", "(2, 3)"}},
      {"cross_entropy: target past the classes", [] { cross_entropy(f({2, 3}), ids({0, 3}, {2})); },
       {"cross_entropy", "target 3", "[0, 3)"}},
      {"cross_entropy: negative target that is not ignore_index", [] { cross_entropy(f({2, 3}), ids({-1, 0}, {2})); },
       {"cross_entropy", "target -1", "[0, 3)"}},
      {"embedding: float ids", [] { embedding(f({5, 2}), f({3})); }, {"embedding", "int64", "float32", "(3)"}},
      {"embedding: id past the vocabulary", [] { embedding(f({5, 2}), ids({0, 5}, {1, 2})); },
       {"embedding", "id 5", "(1, 2)", "(5, 2)"}},
      {"embedding: negative id", [] { embedding(f({5, 2}), ids({-2}, {1})); }, {"embedding", "id -2", "(5, 2)"}},
      {"nn::Embedding: id past the vocabulary", [] { nn::Embedding(4, 3).forward(ids({4}, {1})); },
       {"embedding", "id 4", "(4, 3)"}},
      {"requires_grad on int64", [] { arange(3).set_requires_grad(); }, {"set_requires_grad", "int64", "(3)"}},
      {"an optimizer over an int64 tensor", [] { optim::SGD({arange(3)}, {}); }, {"SGD", "int64", "(3)"}},
  };
  run_table(rows);
}

TEST_CASE("axes out of range name the op, the axis and the shape", "[bad_input]") {
  const std::vector<Row> rows = {
      {"sum: negative axis past the rank", [] { sum(f({2, 3}), -3); }, {"sum", "axis -3", "(2, 3)"}},
      {"mean: axis past the rank", [] { mean(f({2, 3}), 5); }, {"mean", "axis 5", "(2, 3)"}},
      {"max: axis past the rank", [] { sg::max(f({2, 3}), -4); }, {"max", "axis -4", "(2, 3)"}},
      {"sum of a scalar along axis 0", [] { sum(f({}), 0); }, {"sum", "axis 0", "()"}},
      {"transpose: axis past the rank", [] { transpose(f({2, 3}), 0, 3); }, {"transpose", "axis 3", "(2, 3)"}},
      {"permute: axis past the rank", [] { permute(f({2, 3, 4}), {0, 1, 3}); }, {"permute", "axis 3", "(2, 3, 4)"}},
      {"slice: axis past the rank", [] { slice(f({2, 3}), 2, 0, 1); }, {"slice", "axis 2", "(2, 3)"}},
      {"concat: axis past the rank", [] { concat({f({2, 3}), f({2, 3})}, 2); }, {"concat", "axis 2", "(2, 3)"}},
      {"argmax: axis past the rank", [] { kernel::argmax(f({2, 3}), 2); }, {"argmax", "axis 2", "(2, 3)"}},
      {"Tensor::size: axis past the rank", [] { (void)f({2, 3}).size(2); }, {"axis 2", "(2, 3)"}},
  };
  run_table(rows);
}

TEST_CASE("bad valid_lens name the op, the length and the shapes", "[bad_input]") {
  // scores (B=2, Q=3, K=4); attention over queries (2, 3, 8) and keys (2, 4, 8).
  auto mha = [](const Tensor& lens) {
    nn::MultiHeadAttention attention(8, 2, 0);
    attention.forward(f({2, 3, 8}), f({2, 4, 8}), f({2, 4, 8}), lens);
  };
  const std::vector<Row> rows = {
      {"masked_softmax: a negative length", [] { masked_softmax(f({2, 3, 4}), ids({-1, 2}, {2})); },
       {"masked_softmax", "valid length -1", "[0, 4]", "(2, 3, 4)"}},
      {"masked_softmax: a length past the keys", [] { masked_softmax(f({2, 3, 4}), ids({2, 5}, {2})); },
       {"masked_softmax", "valid length 5", "batch 1", "[0, 4]", "(2, 3, 4)"}},
      {"masked_softmax: a (B, Q) length past the keys",
       [] { masked_softmax(f({2, 3, 4}), ids({1, 2, 3, 4, 9, 1}, {2, 3})); },
       {"masked_softmax", "valid length 9", "query 1", "(2, 3, 4)"}},
      {"masked_softmax: valid_lens of the wrong shape", [] { masked_softmax(f({2, 3, 4}), ids({1, 2, 3}, {3})); },
       {"masked_softmax", "(3)", "(2, 3, 4)", "(2) or (2, 3)"}},
      {"masked_softmax: float valid_lens", [] { masked_softmax(f({2, 3, 4}), f({2})); },
       {"masked_softmax", "int64", "float32", "(2)"}},
      {"masked_softmax: scores not (batch, queries, keys)", [] { masked_softmax(f({3, 4}), Tensor()); },
       {"masked_softmax", "(3, 4)"}},
      {"MultiHeadAttention: a negative length", [&] { mha(ids({3, -2}, {2})); },
       {"MultiHeadAttention", "valid length -2", "[0, 4]", "(2, 4, 8)"}},
      {"MultiHeadAttention: a length past the keys", [&] { mha(ids({5, 1}, {2})); },
       {"MultiHeadAttention", "valid length 5", "[0, 4]", "(2, 4, 8)"}},
      {"MultiHeadAttention: valid_lens of the wrong shape", [&] { mha(ids({1, 2, 3, 4}, {4})); },
       {"MultiHeadAttention", "(4)", "(2) or (2, 3)", "(2, 3, 8)"}},
      {"MultiHeadAttention: (B, K) instead of (B, Q)", [&] { mha(ones({2, 4}, int64)); },
       {"MultiHeadAttention", "(2, 4)", "(2) or (2, 3)"}},
      {"MultiHeadAttention: float valid_lens", [&] { mha(f({2})); }, {"MultiHeadAttention", "int64", "float32 (2)"}},
  };
  run_table(rows);
}

TEST_CASE("bad layer settings name the layer and the values", "[bad_input]") {
  static const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<Row> rows = {
      {"MultiHeadAttention: num_heads does not divide num_hiddens", [] { nn::MultiHeadAttention(10, 3, 0); },
       {"MultiHeadAttention", "num_heads 3", "num_hiddens 10"}},
      {"MultiHeadAttention: zero heads", [] { nn::MultiHeadAttention(8, 0, 0); }, {"MultiHeadAttention", "num_heads 0"}},
      {"TransformerEncoderBlock: num_heads does not divide num_hiddens", [] { nn::TransformerEncoderBlock(12, 24, 5, 0); },
       {"num_heads 5", "num_hiddens 12"}},
      {"TransformerEncoder: num_heads does not divide num_hiddens",
       [] { nn::TransformerEncoder({.num_hiddens = 64, .num_heads = 6}); }, {"num_heads 6", "num_hiddens 64"}},
      {"PositionalEncoding: a sequence longer than max_len",
       [] { nn::PositionalEncoding(8, 0, 5).forward(f({1, 6, 8})); },
       {"PositionalEncoding", "[0, 6)", "(1, 6, 8)", "max_len 5"}},
      {"PositionalEncoding: an offset that runs past max_len",
       [] { nn::PositionalEncoding(8, 0, 5).forward(f({2, 3, 8}), 3); },
       {"PositionalEncoding", "[3, 6)", "(2, 3, 8)", "max_len 5"}},
      {"PositionalEncoding: a negative offset", [] { nn::PositionalEncoding(8, 0, 5).forward(f({2, 3, 8}), -1); },
       {"PositionalEncoding", "[-1, 2)", "(2, 3, 8)"}},
      {"PositionalEncoding: input width is not num_hiddens", [] { nn::PositionalEncoding(8, 0, 5).forward(f({1, 2, 6})); },
       {"PositionalEncoding", "(1, 2, 6)", "8"}},
      {"LearnedPositionalEncoding: a sequence longer than max_len",
       [] { nn::LearnedPositionalEncoding(8, 0, 5).forward(f({1, 6, 8})); },
       {"LearnedPositionalEncoding", "[0, 6)", "(1, 6, 8)", "max_len 5"}},
      {"LearnedPositionalEncoding: an offset that runs past max_len",
       [] { nn::LearnedPositionalEncoding(8, 0, 5).forward(f({1, 2, 8}), 4); },
       {"LearnedPositionalEncoding", "[4, 6)", "max_len 5"}},
      {"TransformerEncoder: ids longer than max_len (sinusoidal)",
       [] {
         nn::TransformerEncoder enc({.vocab_size = 5, .num_hiddens = 8, .ffn_num_hiddens = 8, .num_heads = 2,
                                     .num_blocks = 1, .dropout = 0, .max_len = 3});
         enc.forward(zeros({1, 4}, int64));
       },
       {"PositionalEncoding", "[0, 4)", "max_len 3"}},
      {"TransformerEncoder: ids longer than max_len (learned)",
       [] {
         nn::TransformerEncoder enc({.vocab_size = 5, .num_hiddens = 8, .ffn_num_hiddens = 8, .num_heads = 2,
                                     .num_blocks = 1, .dropout = 0, .positional = nn::Positional::learned,
                                     .max_len = 3});
         enc.forward(zeros({1, 4}, int64));
       },
       {"LearnedPositionalEncoding", "[0, 4)", "max_len 3"}},
      {"PositionalEncoding: odd num_hiddens", [] { nn::PositionalEncoding(7, 0); }, {"PositionalEncoding", "7", "even"}},
      {"TransformerEncoder: odd num_hiddens with sinusoidal positions",
       [] { nn::TransformerEncoder({.num_hiddens = 9, .num_heads = 3}); }, {"PositionalEncoding", "9", "even"}},
      {"PositionalEncoding: max_len 0", [] { nn::PositionalEncoding(8, 0, 0); }, {"PositionalEncoding", "max_len", "0"}},
      {"dropout: p = 1", [] { dropout(f({3}), 1.0, true); }, {"dropout", "[0, 1)", "1"}},
      {"dropout: negative p", [] { dropout(f({3}), -0.1, true); }, {"dropout", "[0, 1)", "-0.1"}},
      {"dropout: NaN p", [] { dropout(f({3}), nan, true); }, {"dropout", "[0, 1)", "nan"}},
      {"dropout: bad p in eval mode too", [] { dropout(f({3}), 1.5, false); }, {"dropout", "[0, 1)", "1.5"}},
      {"nn::Dropout: p = 1", [] { nn::Dropout(1.0); }, {"Dropout", "[0, 1)", "1"}},
      {"nn::Dropout: negative p", [] { nn::Dropout(-0.5); }, {"Dropout", "[0, 1)", "-0.5"}},
      {"MultiHeadAttention: dropout p > 1", [] { nn::MultiHeadAttention(8, 2, 1.5); }, {"Dropout", "1.5"}},
      {"PositionalEncoding: dropout p = 1", [] { nn::PositionalEncoding(8, 1.0); }, {"Dropout", "[0, 1)"}},
      {"Linear: zero features", [] { nn::Linear(0, 3); }, {"Linear", "in 0", "out 3"}},
      {"LayerNorm: zero width", [] { nn::LayerNorm(0); }, {"LayerNorm", "0"}},
      {"Embedding: zero vocabulary", [] { nn::Embedding(0, 4); }, {"Embedding", "vocab 0"}},
  };
  run_table(rows);
}

TEST_CASE("empty tensors where they make no sense name the op and the shape", "[bad_input]") {
  const std::vector<Row> rows = {
      {"mean of an empty tensor", [] { mean(f({0})); }, {"mean", "(0)", "empty"}},
      {"mean of a (2, 0) tensor", [] { mean(f({2, 0})); }, {"mean", "(2, 0)", "empty"}},
      {"mean along an empty axis", [] { mean(f({2, 0}), 1); }, {"mean", "axis 1", "(2, 0)", "empty"}},
      {"max of an empty tensor", [] { sg::max(f({0, 3})); }, {"max", "(0, 3)", "empty"}},
      {"max along an empty axis", [] { sg::max(f({3, 0}), 1); }, {"max", "axis 1", "(3, 0)", "empty"}},
      {"argmax along an empty axis", [] { kernel::argmax(f({0, 2}), 0); }, {"argmax", "axis 0", "(0, 2)", "empty"}},
      {"softmax of a scalar", [] { softmax(f({})); }, {"softmax", "scalar"}},
      {"log_softmax of a scalar", [] { log_softmax(f({})); }, {"log_softmax", "scalar"}},
      {"layer_norm of a scalar", [] { layer_norm(f({}), f({1}), f({1})); }, {"layer_norm", "scalar"}},
      {"item of an empty tensor", [] { (void)f({0}).item(); }, {"item", "(0)", "0 elements"}},
      {"item of a tensor of two elements", [] { (void)f({2}).item(); }, {"item", "(2)", "2 elements"}},
      {"select from a scalar", [] { kernel::select(f({}), 0); }, {"select", "scalar"}},
      {"an undefined tensor", [] { (void)Tensor().shape(); }, {"undefined tensor"}},
      {"cross_entropy of an empty class axis", [] { cross_entropy(f({2, 0}), ids({0, 0}, {2})); },
       {"cross_entropy", "target 0", "[0, 0)"}},
  };
  run_table(rows);
}

TEST_CASE("backward misuse names the problem and the shapes", "[bad_input]") {
  const std::vector<Row> rows = {
      {"backward twice through a freed graph",
       [] {
         Tensor w = grad_leaf({3});
         Tensor loss = sum(sg::exp(w) * w);
         backward(loss);
         backward(loss);
       },
       {"backward", "'sum'", "already freed", "retain_graph"}},
      {"backward through a freed shared subgraph",
       [] {
         Tensor w = grad_leaf({3});
         Tensor h = sg::tanh(w);
         backward(sum(h));
         backward(sum(h * 2.0));  // a new head over tanh's freed node
       },
       {"backward", "'tanh'", "already freed"}},
      {"backward of a non-scalar without a gradient", [] { backward(grad_leaf({2, 3}) * 2.0); },
       {"backward", "(2, 3)", "not a scalar"}},
      {"backward with a gradient of the wrong shape", [] { backward(grad_leaf({2, 3}) * 2.0, f({3, 2})); },
       {"backward", "(3, 2)", "(2, 3)"}},
      {"backward with a gradient of the wrong dtype", [] { backward(grad_leaf({2}) * 2.0, d({2})); },
       {"backward", "float64", "float32"}},
      {"backward of a tensor that needs no gradient", [] { backward(sum(f({2, 2}))); },
       {"backward", "()", "does not require grad"}},
      {"set_grad of the wrong shape", [] { grad_leaf({2}).set_grad(f({3})); }, {"set_grad", "(3)", "(2)"}},
  };
  run_table(rows);
}
