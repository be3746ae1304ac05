// What study/encoder_training.hpp declares.
#include "study/encoder_training.hpp"

#include <algorithm>
#include <map>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/cross_entropy.hpp"
#include "autograd/ops/shape.hpp"
#include "core/kernels.hpp"
#include "optim/optim.hpp"

namespace sg::study {

const std::vector<std::string>& task_names() {
  static const std::vector<std::string> names = {"shift", "sort", "reverse", "count", "tally", "recall"};
  return names;
}

const std::vector<std::string>& causal_task_names() {
  static const std::vector<std::string> names = {"shift", "tally", "recall"};
  return names;
}

void check_config(const Config& c) {
  if (std::find(task_names().begin(), task_names().end(), c.task) == task_names().end())
    sg::fail("train_encoder: unknown task '", c.task, "' (shift, sort, reverse, count, tally, recall)");
  const auto& causal_tasks = causal_task_names();
  if (c.causal && std::find(causal_tasks.begin(), causal_tasks.end(), c.task) == causal_tasks.end())
    sg::fail("train_encoder: task '", c.task, "' labels a position from tokens after it, which the causal "
             "mask hides (causal tasks: shift, tally, recall)");
  // The messages name the flags train_encoder's user typed (--max-len for
  // max_len): this is where a bad combination of them is first seen.
  if (c.vocab < 3) sg::fail("train_encoder: --vocab ", c.vocab, " must be at least 3");
  if (c.min_len < 1 || c.max_len < c.min_len)
    sg::fail("train_encoder: training lengths [--min-len ", c.min_len, ", --max-len ", c.max_len, "] are empty");
  if (c.eval_min_len < 1 || c.eval_max_len < c.eval_min_len)
    sg::fail("train_encoder: evaluation lengths [--eval-min-len ", c.eval_min_len, ", --eval-max-len ",
             c.eval_max_len, "] are empty");
  if (c.steps < 1 || c.batch < 1 || c.eval_every < 1 || c.eval_sequences < 1)
    sg::fail("train_encoder: --steps ", c.steps, ", --batch ", c.batch, ", --eval-every ", c.eval_every,
             " and the evaluation's sequences ", c.eval_sequences, " must be positive");
  if (c.hidden < 1 || c.heads < 1 || c.hidden % c.heads != 0)
    sg::fail("train_encoder: --heads ", c.heads, " must divide --hidden ", c.hidden,
             " (each head takes --hidden / --heads features)");
  if (c.positional == sg::nn::Positional::sinusoidal && c.hidden % 2 != 0)
    sg::fail("train_encoder: --hidden ", c.hidden, " must be even for --positional sinusoidal (sin and cos come in pairs)");
  if (c.positional == sg::nn::Positional::rotary && (c.hidden / c.heads) % 2 != 0)
    sg::fail("train_encoder: --hidden ", c.hidden, " / --heads ", c.heads, " = ", c.hidden / c.heads,
             " features per head must be even for --positional rotary (features rotate in pairs)");
  if (c.shift < 1) sg::fail("train_encoder: --shift ", c.shift, " must be at least 1");
  // Positions before the shift are unlabelled: with a shift of --max-len or
  // more no training sequence has a labelled position.
  if (c.task == "shift" && c.shift >= c.max_len)
    sg::fail("train_encoder: --shift ", c.shift, " must be less than --max-len ", c.max_len,
             " (otherwise no training position has a token to copy, and there is nothing to learn)");
  if (c.back < 1) sg::fail("train_encoder: --back ", c.back, " must be at least 1");
  if (c.task == "recall" && c.back >= c.max_len)
    sg::fail("train_encoder: --back ", c.back, " must be less than --max-len ", c.max_len,
             " (otherwise no training position has a token to recall, and there is nothing to learn)");
  if (c.schedule != "cosine" && c.schedule != "constant")
    sg::fail("train_encoder: schedule '", c.schedule, "' is not cosine or constant");
}

Batch make_batch(const Config& c, int64_t batch, int64_t min_len, int64_t max_len, sg::Generator& gen) {
  std::vector<int64_t> ids(static_cast<size_t>(batch * max_len), kPad);
  std::vector<int64_t> labels(ids.size(), kIgnore), lens(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = gen.randint(min_len, max_len + 1);
    lens[static_cast<size_t>(b)] = len;
    int64_t* x = ids.data() + b * max_len;
    int64_t* y = labels.data() + b * max_len;
    for (int64_t t = 0; t < len; ++t) x[t] = gen.randint(1, c.vocab);
    if (c.task == "shift") {
      for (int64_t t = 0; t < len; ++t) y[t] = t >= c.shift ? x[t - c.shift] : 0;
    } else if (c.task == "sort") {
      std::vector<int64_t> s(x, x + len);
      std::sort(s.begin(), s.end());
      std::copy(s.begin(), s.end(), y);
    } else if (c.task == "reverse") {
      for (int64_t t = 0; t < len; ++t) y[t] = x[len - 1 - t];
    } else if (c.task == "count") {
      for (int64_t t = 0; t < len; ++t) y[t] = std::count(x, x + len, x[t]);
    } else if (c.task == "tally") {
      for (int64_t t = 0; t < len; ++t) y[t] = std::count(x, x + t + 1, x[t]);
    } else {  // recall
      for (int64_t t = 0; t < len; ++t) y[t] = t >= c.back ? x[t - c.back] : 0;
    }
  }
  // What the accuracy counts: the labels that depend on the input (not the
  // fixed 0 before shift's or recall's first copied token).
  std::vector<int64_t> scored = labels;
  if (const int64_t fixed = c.task == "shift" ? c.shift : c.task == "recall" ? c.back : 0; fixed > 0)
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < std::min(fixed, max_len); ++t) scored[static_cast<size_t>(b * max_len + t)] = kIgnore;
  return {sg::from_vector(ids, {batch, max_len}), sg::from_vector(lens, {batch}),
          sg::from_vector(labels, {batch, max_len}), sg::from_vector(scored, {batch, max_len})};
}

double accuracy(const sg::Tensor& logits, const sg::Tensor& labels) {
  const std::vector<int64_t> pred = sg::kernel::argmax(logits, -1).to_vector<int64_t>();
  const std::vector<int64_t> y = labels.to_vector<int64_t>();
  int64_t right = 0, total = 0;
  for (size_t i = 0; i < y.size(); ++i)
    if (y[i] != kIgnore) ++total, right += pred[i] == y[i];
  return total ? static_cast<double>(right) / static_cast<double>(total) : 0.0;
}

EvalSet make_eval_set(const Config& c, int64_t min_len, int64_t max_len, uint64_t salt) {
  sg::Generator gen(0x5eed0000ull + salt * 1000 + static_cast<uint64_t>(min_len * 100 + max_len));
  EvalSet s;
  for (int64_t done = 0; done < c.eval_sequences; done += c.batch)
    s.batches.push_back(make_batch(c, std::min(c.batch, c.eval_sequences - done), min_len, max_len, gen));
  return s;
}

double evaluate(Model& model, const EvalSet& set) {
  sg::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  double right = 0, total = 0;
  for (const Batch& b : set.batches) {
    const sg::Tensor logits = model.forward(b.ids, b.valid_lens);
    const std::vector<int64_t> y = b.scored.to_vector<int64_t>();
    double n = 0;
    for (int64_t v : y) n += v != kIgnore;
    right += accuracy(logits, b.scored) * n;
    total += n;
  }
  model.train(was_training);
  return total ? right / total : 0.0;
}

double chance_accuracy(const EvalSet& set) {
  std::map<int64_t, int64_t> counts;
  int64_t total = 0;
  for (const Batch& b : set.batches)
    for (int64_t v : b.scored.to_vector<int64_t>())
      if (v != kIgnore) ++counts[v], ++total;
  int64_t most = 0;
  for (const auto& [label, n] : counts) most = std::max(most, n);
  return total ? static_cast<double>(most) / static_cast<double>(total) : 0.0;
}

PositionAccuracy evaluate_positions(Model& model, const EvalSet& set) {
  sg::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  PositionAccuracy p;
  for (const Batch& b : set.batches) {
    const int64_t T = b.ids.shape()[1];
    if (static_cast<int64_t>(p.right.size()) < T) p.right.resize(static_cast<size_t>(T)), p.total.resize(static_cast<size_t>(T));
    const std::vector<int64_t> pred = sg::kernel::argmax(model.forward(b.ids, b.valid_lens), -1).to_vector<int64_t>();
    const std::vector<int64_t> y = b.scored.to_vector<int64_t>();
    for (size_t i = 0; i < y.size(); ++i)
      if (y[i] != kIgnore) {
        const size_t t = i % static_cast<size_t>(T);
        ++p.total[t];
        p.right[t] += pred[i] == y[i];
      }
  }
  model.train(was_training);
  return p;
}

double grad_norm(const sg::nn::Module& model, const std::string& prefix) {
  double squares = 0;
  for (const auto& [name, p] : model.named_parameters())
    if (name.rfind(prefix, 0) == 0 && p.grad().defined())
      squares += sg::kernel::sum(sg::kernel::mul(p.grad(), p.grad())).item<double>();
  return std::sqrt(squares);
}

int64_t labelled_count(const sg::Tensor& labels) {
  int64_t n = 0;
  for (int64_t v : labels.to_vector<int64_t>()) n += v != kIgnore;
  return n;
}

int64_t right_count(const sg::Tensor& logits, const sg::Tensor& labels) {
  const std::vector<int64_t> pred = sg::kernel::argmax(logits, -1).to_vector<int64_t>();
  const std::vector<int64_t> y = labels.to_vector<int64_t>();
  int64_t right = 0;
  for (size_t i = 0; i < y.size(); ++i) right += y[i] != kIgnore && pred[i] == y[i];
  return right;
}

sg::Tensor micro_batch_loss(const Model& model, const Batch& b, const sg::parallel::MicroBatch& m, int64_t labelled,
                            int64_t* right) {
  const int64_t end = m.first + m.count;
  const sg::Tensor labels = sg::slice(b.labels, 0, m.first, end);
  const sg::Tensor logits =
      model.forward(sg::slice(b.ids, 0, m.first, end), sg::slice(b.valid_lens, 0, m.first, end), m.dropout_keys);
  if (right) *right = right_count(logits, sg::slice(b.scored, 0, m.first, end));
  const double share = labelled ? static_cast<double>(labelled_count(labels)) / static_cast<double>(labelled) : 0.0;
  return sg::cross_entropy(logits, labels, kIgnore) * share;
}

StepOutcome forward_backward(const Model& model, const Batch& b, sg::parallel::DataParallel* dp, bool count_right) {
  StepOutcome out;
  if (!dp) {
    const sg::Tensor logits = model.forward(b.ids, b.valid_lens);
    const sg::Tensor loss = sg::cross_entropy(logits, b.labels, kIgnore);
    sg::backward(loss);
    out.loss = loss.item<double>();
    if (count_right) out.right = right_count(logits, b.scored), out.labelled = labelled_count(b.scored);
    return out;
  }
  const int64_t batch = b.ids.shape()[0], labelled = labelled_count(b.labels);
  std::vector<int64_t> right(static_cast<size_t>(dp->threads()), 0);
  out.loss = dp->backward(batch, [&](const sg::parallel::MicroBatch& m) {
    return micro_batch_loss(model, b, m, labelled, count_right ? &right[static_cast<size_t>(m.index)] : nullptr);
  });
  for (int64_t r : right) out.right += r;
  out.labelled = labelled_count(b.scored);
  return out;
}

int data_parallel_threads(const Config& c) {
  const int threads = sg::num_threads();
  return threads > 1 && c.batch > 1 ? static_cast<int>(std::min<int64_t>(threads, c.batch)) : 1;
}

Result train(Model& model, const Config& c, const Progress& progress,
             const std::atomic<bool>* stop, const StepFn& step_fn) {
  check_config(c);
  sg::Generator data_gen(c.seed * 7919 + 1);
  sg::optim::AdamW opt(model.parameters(), {.lr = c.lr, .weight_decay = c.weight_decay});
  const auto schedule = c.schedule == "cosine"
                            ? sg::optim::warmup_cosine_schedule(c.lr, std::min(c.warmup, c.steps), c.steps, c.min_lr)
                            : sg::optim::constant_schedule(c.lr);
  const EvalSet eval_train = make_eval_set(c, c.min_len, c.max_len, 1);
  Result r;
  r.chance = chance_accuracy(eval_train);
  if (!c.record_attention_at.empty()) {
    sg::Generator example_gen(0x5eed0000ull + 3000 + static_cast<uint64_t>(c.min_len * 100 + c.max_len));
    r.attention.examples = make_batch(c, c.record_sequences, c.min_len, c.max_len, example_gen);
  }
  auto record = [&](int64_t step) {
    if (std::find(c.record_attention_at.begin(), c.record_attention_at.end(), step) == c.record_attention_at.end())
      return;
    sg::NoGradGuard no_grad;
    const bool was_training = model.is_training();
    model.eval();
    std::vector<sg::Tensor> weights;  // per block
    model.forward(r.attention.examples.ids, r.attention.examples.valid_lens, nullptr, &weights);
    AttentionSnapshot snap{step, {}};
    for (const sg::Tensor& w : weights) snap.blocks.push_back(w.to_vector<float>());
    r.attention.snapshots.push_back(std::move(snap));
    model.train(was_training);
  };
  {
    // Step 0: the first batch before any update (a copy of the data stream,
    // so training sees the same batches as without it), without dropout.
    sg::Generator peek(data_gen);
    const Batch b = make_batch(c, c.batch, c.min_len, c.max_len, peek);
    model.eval();
    const sg::Tensor logits = model.forward(b.ids, b.valid_lens);
    const sg::Tensor loss = sg::cross_entropy(logits, b.labels, kIgnore);
    opt.zero_grad();
    sg::backward(loss);
    r.curve.push_back({0, loss.item<double>(), accuracy(logits, b.scored), evaluate(model, eval_train),
                       grad_norm(model, ""), grad_norm(model, "encoder.blocks.0.")});
    opt.zero_grad();
    record(0);
    if (r.steps_to_95 < 0 && r.curve[0].eval_acc >= 0.95) r.steps_to_95 = 0;
  }
  model.train();
  const auto start = std::chrono::steady_clock::now();
  int64_t tokens = 0;
  std::unique_ptr<sg::parallel::DataParallel> dp;
  if (const int threads = data_parallel_threads(c); threads > 1 && !step_fn)
    dp = std::make_unique<sg::parallel::DataParallel>(model.parameters(), threads);
  // With data-parallel steps the workers are the parallelism: everything
  // else runs on this thread (parallel/data_parallel.hpp says why).
  std::optional<sg::ThreadCountGuard> one_thread;
  if (dp) one_thread.emplace(1);
  for (int64_t step = 1; step <= c.steps; ++step) {
    if (stop && stop->load()) sg::fail("train: stopped before step ", step, " of ", c.steps);
    const Batch b = make_batch(c, c.batch, c.min_len, c.max_len, data_gen);
    const bool report = step % c.eval_every == 0 || step == c.steps;
    opt.zero_grad();
    const StepOutcome done = step_fn ? step_fn(model, b, report) : forward_backward(model, b, dp.get(), report);
    const double norm = report ? grad_norm(model, "") : 0;
    const double first_block_norm = report ? grad_norm(model, "encoder.blocks.0.") : 0;
    if (c.clip > 0) sg::optim::clip_grad_norm(model.parameters(), c.clip);
    opt.set_lr(schedule(opt.step_count()));
    opt.step();
    for (int64_t v : b.valid_lens.to_vector<int64_t>()) tokens += v;
    r.step_loss.push_back(done.loss);
    record(step);
    if (report) {
      const double train_acc = done.labelled ? static_cast<double>(done.right) / static_cast<double>(done.labelled) : 0.0;
      const double eval_acc = evaluate(model, eval_train);
      r.curve.push_back({step, done.loss, train_acc, eval_acc, norm, first_block_norm});
      if (r.steps_to_95 < 0 && eval_acc >= 0.95) r.steps_to_95 = step;
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (progress)
        progress(step, c.steps, done.loss, train_acc, static_cast<double>(tokens) / elapsed,
                 elapsed / static_cast<double>(step) * static_cast<double>(c.steps - step));
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.tokens_per_second = static_cast<double>(tokens) / r.seconds;
  r.acc_train_lengths = r.curve.back().eval_acc;
  r.acc_longer = evaluate(model, make_eval_set(c, c.eval_min_len, c.eval_max_len, 2));
  const PositionAccuracy longer = evaluate_positions(model, make_eval_set(c, c.eval_min_len, c.eval_max_len, 2));
  r.acc_by_position = longer.by_position();
  r.acc_past_train = longer.from(c.max_len);
  return r;
}

}  // namespace sg::study
