#pragma once
// Training a tiny self-attention encoder on synthetic sequence tasks, shared
// by examples/train_encoder.cpp, the benchmarks and the training tests;
// compiled once, in the study library (study/encoder_training.cpp).
//
// Every batch is generated on the fly: sequences of random symbols with
// random lengths, padded to the longest, with valid_lens masking the padding
// and ignore_index hiding it from the loss. The tasks:
//
//   shift   label[t] = x[t - k] (0 for t < k): needs positions (relative ones)
//   sort    label[t] = the t-th smallest symbol: needs absolute positions
//   reverse label[t] = x[L - 1 - t]: needs positions and the length
//   count   label[t] = how often x[t] occurs in the sequence: order does not
//           matter, the control task that needs no positions at all
//   tally   label[t] = how often x[t] occurs in x[0..t]: a running count
//   recall  label[t] = x[t - back] (0 for t < back): shift, further back
//
// The accuracy, the steps to 95% and the per-position curves count only the
// positions whose label depends on the input (Batch::scored): the fixed 0
// of shift's and recall's first positions would lift every row, most of all
// those near chance. The loss keeps them: without them in the loss, shift
// with sinusoidal positions stayed at 0.28 accuracy after 800 steps (seeds
// 0, 1 and 2; learned positions the same, seed 0), where with them it
// reaches 0.99. A likely reason: "0 at the first position" is the easiest
// positional fact to learn, and it starts the model reading its positions.
//
// With Config::causal the model is a decoder-only stack: every attention
// hides the keys after its query (causal mask). Its tasks must then label
// position t from tokens 0..t alone: shift, tally and recall
// (causal_task_names()); sort, reverse and count look ahead.
#include "core/random.hpp"
#include "core/runtime.hpp"
#include "core/tensor.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"
#include "nn/transformer.hpp"
#include "parallel/data_parallel.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sg::study {

inline constexpr int64_t kPad = 0;        // token 0 pads; symbols are 1 .. vocab-1
inline constexpr int64_t kIgnore = -100;  // label of padded positions

const std::vector<std::string>& task_names();

// The tasks whose label at t depends on tokens up to t only.
const std::vector<std::string>& causal_task_names();

struct Config {
  std::string task = "shift";
  sg::nn::Positional positional = sg::nn::Positional::sinusoidal;
  int64_t max_distance = 8;      // relative positions: offsets clipped to +-max_distance
  bool relative_values = true;   // relative positions: also the table added to the values
  bool pre_norm = false;     // pre-norm blocks instead of d2l's post-norm
  bool causal = false;       // every attention hides the keys after its query
  int64_t vocab = 16, hidden = 64, heads = 4, ffn = 128, blocks = 2;
  double dropout = 0.0;
  int64_t batch = 64, min_len = 4, max_len = 12;  // training lengths
  int64_t eval_min_len = 13, eval_max_len = 16;   // longer than any seen in training
  int64_t steps = 800, warmup = 50;
  double lr = 3e-3, min_lr = 3e-4, weight_decay = 0.01, clip = 1.0;
  std::string schedule = "cosine";  // or "constant"
  int64_t shift = 1;
  int64_t back = 3;  // task recall: label[t] = x[t - back]
  uint64_t seed = 0;
  int64_t eval_every = 50, eval_sequences = 256;
  // Steps at which to record every head's attention over a few example
  // sequences (0: before training; steps past `steps` are skipped).
  std::vector<int64_t> record_attention_at;
  int64_t record_sequences = 4;

  // Output classes: symbols (0 is padding, never a label) or counts 0..max length.
  int64_t classes() const {
    return task == "count" || task == "tally" ? std::max(max_len, eval_max_len) + 1 : vocab;
  }
  int64_t positions() const { return std::max(max_len, eval_max_len); }
};

void check_config(const Config& c);

struct Batch {
  sg::Tensor ids;         // (B, T) int64, padded with kPad
  sg::Tensor valid_lens;  // (B) int64
  sg::Tensor labels;      // (B, T) int64, kIgnore on padding: the loss's targets
  sg::Tensor scored;      // (B, T) int64: labels, and kIgnore where the label is fixed (what accuracy counts)
};

// Sequences with lengths uniform in [min_len, max_len], padded to max_len.
Batch make_batch(const Config& c, int64_t batch, int64_t min_len, int64_t max_len, sg::Generator& gen);

// The encoder plus a linear head from each token's representation to its label.
struct Model : sg::nn::Module {
  explicit Model(const Config& c) {
    const sg::nn::TransformerEncoderOptions o{.vocab_size = c.vocab,
                                              .num_hiddens = c.hidden,
                                              .ffn_num_hiddens = c.ffn,
                                              .num_heads = c.heads,
                                              .num_blocks = c.blocks,
                                              .dropout = c.dropout,
                                              .positional = c.positional,
                                              .max_len = c.positions(),
                                              .max_distance = c.max_distance,
                                              .relative_values = c.relative_values,
                                              .pre_norm = c.pre_norm,
                                              .causal = c.causal};
    encoder = register_module("encoder", std::make_shared<sg::nn::TransformerEncoder>(o));
    head = register_module("head", std::make_shared<sg::nn::Linear>(c.hidden, c.classes()));
  }
  // ids: (B, T), valid_lens: (B) -> logits: (B, T, classes). dropout_keys:
  // a data-parallel micro-batch's (nn/basic.hpp); attention_weights: when
  // given, set to each block's (TransformerEncoder::forward).
  sg::Tensor forward(const sg::Tensor& ids, const sg::Tensor& valid_lens, sg::nn::DropoutKeys* dropout_keys = nullptr,
                     std::vector<sg::Tensor>* attention_weights = nullptr) const {
    return head->forward(encoder->forward(ids, valid_lens, dropout_keys, attention_weights));
  }
  std::shared_ptr<sg::nn::TransformerEncoder> encoder;
  std::shared_ptr<sg::nn::Linear> head;
};

// Fraction of the labelled positions (labels != kIgnore; pass Batch::scored)
// whose arg-max logit is the label.
double accuracy(const sg::Tensor& logits, const sg::Tensor& labels);

// A fixed evaluation set: the same sequences for every model trained with
// the same config (its generator is seeded from the lengths, not the run).
struct EvalSet {
  std::vector<Batch> batches;
};
EvalSet make_eval_set(const Config& c, int64_t min_len, int64_t max_len, uint64_t salt);

double evaluate(Model& model, const EvalSet& set);

// Chance level: the accuracy of always answering the set's most frequent
// label (over its labelled positions), what a model that ignores its input
// can reach. About 1/15 for the tasks that copy a symbol, more for count and
// tally, whose small counts are common.
double chance_accuracy(const EvalSet& set);

// Right and scored tokens at each position 0 .. T-1 of a set's sequences.
struct PositionAccuracy {
  std::vector<int64_t> right, total;
  // Accuracy at each position (NaN where no sequence reaches it).
  std::vector<double> by_position() const {
    std::vector<double> a(right.size());
    for (size_t t = 0; t < a.size(); ++t)
      a[t] = total[t] ? static_cast<double>(right[t]) / static_cast<double>(total[t]) : std::nan("");
    return a;
  }
  // Accuracy over positions first .. T-1 together (NaN if none is scored).
  double from(int64_t first) const {
    int64_t r = 0, n = 0;
    for (size_t t = static_cast<size_t>(std::max<int64_t>(first, 0)); t < right.size(); ++t) r += right[t], n += total[t];
    return n ? static_cast<double>(r) / static_cast<double>(n) : std::nan("");
  }
};

PositionAccuracy evaluate_positions(Model& model, const EvalSet& set);

struct CurvePoint {
  int64_t step;
  double loss, train_acc, eval_acc;
  // Gradient 2-norms of this step, before clipping: of every parameter, and
  // of the first block's alone (the one furthest from the loss; it is the
  // first to see gradients vanish in a deep stack).
  double grad_norm, first_block_grad_norm;
};

// Every block's attention over the example sequences at one step.
struct AttentionSnapshot {
  int64_t step;
  std::vector<std::vector<float>> blocks;  // per block: (B, heads, T, T), row-major
};

// The example sequences (fixed for a config, like the evaluation set) and
// the attention recorded over them as the model trained.
struct AttentionRecord {
  Batch examples;  // record_sequences sequences of training lengths, padded to max_len
  std::vector<AttentionSnapshot> snapshots;
};

struct Result {
  // Evaluations: at step 0 (before any update: the loss, accuracy and
  // gradient norms of the first batch) and every eval_every steps.
  std::vector<CurvePoint> curve;
  std::vector<double> step_loss;  // the training loss of every step 1..steps
  AttentionRecord attention;
  double acc_train_lengths = 0, acc_longer = 0;
  double chance = 0;  // chance_accuracy of the training lengths' evaluation set
  // On the longer sequences: accuracy over the positions past the longest
  // training sequence alone (max_len + 1 .. eval_max_len, counted from 1),
  // and at each position 1 .. eval_max_len (index 0 is position 1).
  double acc_past_train = 0;
  std::vector<double> acc_by_position;
  int64_t steps_to_95 = -1;  // first evaluation at >= 95%, -1 if never
  double seconds = 0, tokens_per_second = 0;
};

// The 2-norm of the gradients of the parameters whose names start with prefix.
double grad_norm(const sg::nn::Module& model, const std::string& prefix);

// One step's forward and backward: gradients added into the parameters'
// .grad, the batch's mean loss, and (with `count_right`) how many of its
// labelled positions the model got right. With `dp` the batch runs as
// data-parallel micro-batches (parallel/data_parallel.hpp), each micro-batch's
// share of the mean loss its tokens' sum over the batch's token count;
// without, as one graph.
struct StepOutcome {
  double loss = 0;
  int64_t right = 0, labelled = 0;
};
int64_t labelled_count(const sg::Tensor& labels);
int64_t right_count(const sg::Tensor& logits, const sg::Tensor& labels);
// One micro-batch of a data-parallel step (sequences m.first .. m.first +
// m.count - 1 of `b`): its loss, weighted by its share of the batch's
// `labelled` positions so that the micro-batches' losses add up to the
// batch's mean loss; with `right`, *right = how many of its labelled
// positions (Batch::scored) the model got right. A distributed step computes its shard of
// the batch with it too (examples/mpi/train_encoder_mpi.cpp).
sg::Tensor micro_batch_loss(const Model& model, const Batch& b, const sg::parallel::MicroBatch& m, int64_t labelled,
                            int64_t* right);
StepOutcome forward_backward(const Model& model, const Batch& b, sg::parallel::DataParallel* dp, bool count_right);

// Whether train() runs data-parallel steps: when more than one thread is in
// force for the calling thread (sg::num_threads()) and the batch has more
// than one sequence. A training that should stay on one thread (each of
// train_encoder --compare's, side by side) runs under sg::ThreadCountGuard(1).
int data_parallel_threads(const Config& c);

// Progress callback: (step, steps, loss, accuracy, tokens/s, seconds left).
using Progress = std::function<void(int64_t, int64_t, double, double, double, double)>;

// Trains `model` with AdamW (warm-up + cosine or constant learning rate,
// global-norm clipping) and evaluates on training and longer lengths.
// Steps are data-parallel when more than one thread is in force
// (data_parallel_threads): the results then equal the one-thread run's up
// to floating-point rounding, and are the same bits for the same count.
// When `stop` is given and becomes true (a signal handler sets it), throws
// sg::Error at the start of the next step.
// How a step's gradients are computed, when not by forward_backward on
// this process's threads: a distributed run passes its own
// (examples/mpi/train_encoder_mpi.cpp).
using StepFn = std::function<StepOutcome(const Model& model, const Batch& batch, bool count_right)>;

Result train(Model& model, const Config& c, const Progress& progress = nullptr,
             const std::atomic<bool>* stop = nullptr, const StepFn& step_fn = nullptr);

}  // namespace sg::study
