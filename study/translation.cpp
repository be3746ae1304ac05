// What study/translation.hpp declares: the data, the model, the metrics,
// decoding and training. The files the program writes and the comparison's
// pool are in study/translation_files.cpp.
#include "study/translation.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "autograd/engine.hpp"
#include "core/error.hpp"
#include "decoding/search.hpp"
#include "nn/loss.hpp"
#include "optim/optim.hpp"
#include "text/bleu.hpp"

namespace sg::study {

void check_seq2seq_config(const Seq2SeqConfig& c, const char* study) {
  auto at_least = [study](const char* name, int64_t v, int64_t lo) {
    if (v < lo) sg::fail(study, ": ", name, " is ", v, ", expected at least ", lo);
  };
  at_least("hidden", c.hidden, 1), at_least("ffn", c.ffn, 1), at_least("heads", c.heads, 1);
  at_least("blocks", c.blocks, 1), at_least("steps", c.steps, 1), at_least("batch", c.batch, 1);
  at_least("eval_every", c.eval_every, 1), at_least("beam", c.beam, 1), at_least("warmup", c.warmup, 0);
  at_least("num_steps", c.num_steps, 2);
  if (c.hidden % c.heads != 0) sg::fail(study, ": hidden ", c.hidden, " is not a multiple of heads ", c.heads);
  if (c.positional == nn::Positional::rotary && (c.hidden / c.heads) % 2 != 0)
    sg::fail(study, ": rotary positions need an even head width, hidden ", c.hidden, " / heads ", c.heads, " is ",
             c.hidden / c.heads);
  if (!(c.dropout >= 0 && c.dropout < 1)) sg::fail(study, ": dropout ", c.dropout, " is outside [0, 1)");
  if (!(c.lr > 0) || !(c.min_lr >= 0) || c.min_lr > c.lr)
    sg::fail(study, ": learning rates lr ", c.lr, " and min_lr ", c.min_lr, " need 0 <= min_lr <= lr, 0 < lr");
}

void check_config(const TranslationConfig& c) {
  check_seq2seq_config(c, "translation");
  if (c.test_cap < 1) sg::fail("translation: test_cap is ", c.test_cap, ", expected at least 1");
  if (c.train_cap < 1) sg::fail("translation: train_cap is ", c.train_cap, ", expected at least 1");
  if (c.max_number < 9 || c.max_number > kNumberWordsMax)
    sg::fail("translation: max_number is ", c.max_number, ", expected 9..", kNumberWordsMax);
}

int64_t longest_french(int64_t max_number) {
  if (max_number < 0 || max_number > kNumberWordsMax)
    sg::fail("longest_french: ", max_number, " is outside 0..", kNumberWordsMax);
  int64_t most = 0;
  for (int64_t n = 0; n <= max_number; ++n)
    most = std::max(most, static_cast<int64_t>(number_tokens(french_words(n)).size()));
  return most;
}

TranslationData make_translation_data(const TranslationConfig& c) {
  check_config(c);
  const NumberSplit split = c.max_number <= 999
                                ? split_numbers(0, c.max_number, c.test_fraction, c.split_seed)
                                : split_by_length(c.max_number, c.test_fraction, c.test_cap, c.train_cap, c.split_seed);
  TranslationData d;
  d.train = number_pairs(split.train);
  d.test = number_pairs(split.test);
  d.src_vocab = std::make_shared<text::Vocab>(d.train.english);
  d.tgt_vocab = std::make_shared<text::Vocab>(d.train.french);
  d.train_batch = text::build_batch(d.train.english, d.train.french, *d.src_vocab, *d.tgt_vocab, c.num_steps);
  d.test_batch = text::build_batch(d.test.english, d.test.french, *d.src_vocab, *d.tgt_vocab, c.num_steps);
  for (const NumberPairs* p : {&d.train, &d.test})  // a truncated pair could never be translated right
    for (size_t i = 0; i < p->numbers.size(); ++i)
      if (static_cast<int64_t>(std::max(p->english[i].size(), p->french[i].size())) >= c.num_steps)
        sg::fail("translation: ", p->numbers[i], " has ", std::max(p->english[i].size(), p->french[i].size()),
                 " tokens, too many for num_steps ", c.num_steps, " (with <eos>): raise it to ",
                 std::max(p->english[i].size(), p->french[i].size()) + 1);
  return d;
}

std::unique_ptr<nn::EncoderDecoder> make_translator(const TranslationConfig& c, const TranslationData& d) {
  return make_translator(c, d.src_vocab->size(), d.tgt_vocab->size());
}

std::unique_ptr<nn::EncoderDecoder> make_translator(const Seq2SeqConfig& c, int64_t src_vocab_size,
                                                    int64_t tgt_vocab_size) {
  check_seq2seq_config(c, "make_translator");
  // The encoder's and the decoder's options are two types with the same
  // fields: one list fills both.
  const auto fill = [&c](auto o, int64_t vocab_size) {
    o.vocab_size = vocab_size;
    o.num_hiddens = c.hidden;
    o.ffn_num_hiddens = c.ffn;
    o.num_heads = c.heads;
    o.num_blocks = c.blocks;
    o.dropout = c.dropout;
    o.positional = c.positional;
    o.max_len = c.num_steps;
    o.max_distance = c.max_distance;
    o.pre_norm = c.pre_norm;
    return o;
  };
  const auto enc = fill(nn::TransformerEncoderOptions{}, src_vocab_size);
  const auto dec = fill(nn::TransformerDecoderOptions{}, tgt_vocab_size);
  return std::make_unique<nn::EncoderDecoder>(enc, dec);
}

namespace {

void check_pairs(const char* what, size_t preds, size_t refs) {
  if (preds != refs) sg::fail(what, ": ", preds, " predictions for ", refs, " references");
}

}  // namespace

double exact_match(const std::vector<text::Tokens>& preds, const std::vector<text::Tokens>& refs) {
  check_pairs("exact_match", preds.size(), refs.size());
  if (preds.empty()) sg::fail("exact_match: no pairs");
  int64_t right = 0;
  for (size_t i = 0; i < preds.size(); ++i) right += preds[i] == refs[i];
  return static_cast<double>(right) / static_cast<double>(preds.size());
}

double token_accuracy(const std::vector<text::Tokens>& preds, const std::vector<text::Tokens>& refs) {
  check_pairs("token_accuracy", preds.size(), refs.size());
  int64_t right = 0, total = 0;
  for (size_t i = 0; i < preds.size(); ++i) {
    const size_t common = std::min(preds[i].size(), refs[i].size());
    for (size_t t = 0; t < common; ++t) right += preds[i][t] == refs[i][t];
    total += static_cast<int64_t>(std::max(preds[i].size(), refs[i].size()));
  }
  return total ? static_cast<double>(right) / static_cast<double>(total) : 0.0;
}

Scores score(const std::vector<text::Tokens>& preds, const std::vector<text::Tokens>& refs) {
  Scores s;
  s.exact = exact_match(preds, refs);
  s.token_accuracy = token_accuracy(preds, refs);
  for (size_t i = 0; i < preds.size(); ++i) s.bleu2 += text::bleu(preds[i], refs[i], 2);
  s.bleu2 /= static_cast<double>(preds.size());
  s.bleu4 = text::corpus_bleu(preds, refs, 4);
  return s;
}

LengthScores exact_by_length(const std::vector<int64_t>& numbers, const std::vector<text::Tokens>& preds,
                             const std::vector<text::Tokens>& refs) {
  check_pairs("exact_by_length", preds.size(), refs.size());
  check_pairs("exact_by_length (numbers)", numbers.size(), refs.size());
  LengthScores s;
  std::vector<int64_t> right(7, 0);
  for (size_t i = 0; i < numbers.size(); ++i) {
    const auto len = static_cast<size_t>(digit_length(numbers[i]));
    ++s.count[len];
    right[len] += preds[i] == refs[i];
  }
  for (size_t len = 1; len <= 6; ++len)
    if (s.count[len]) s.exact[len] = static_cast<double>(right[len]) / static_cast<double>(s.count[len]);
  return s;
}

std::vector<text::Tokens> translate(const nn::EncoderDecoder& model, const TranslationData& d,
                                    const text::Seq2SeqBatch& b, Search search, nn::DecodingMode mode, int64_t beam) {
  return translate(model, *d.tgt_vocab, b, search, mode, beam);
}

std::vector<text::Tokens> translate(const nn::EncoderDecoder& model, const text::Vocab& tgt_vocab,
                                    const text::Seq2SeqBatch& b, Search search, nn::DecodingMode mode, int64_t beam,
                                    int64_t max_len, const std::atomic<bool>* stop) {
  NoGradGuard no_grad;
  decoding::SearchOptions o;
  o.stop = stop;
  o.bos = tgt_vocab.bos(), o.eos = tgt_vocab.eos(), o.pad = tgt_vocab.pad();
  o.max_len = max_len > 0 ? max_len : b.labels.size(1);
  o.beam_width = beam;
  o.mode = mode;
  const std::vector<decoding::Hypothesis> hyps = search == Search::greedy
                                                     ? decoding::greedy(model, b.src, b.src_valid_lens, o)
                                                     : decoding::beam_search(model, b.src, b.src_valid_lens, o);
  std::vector<text::Tokens> out;
  for (const decoding::Hypothesis& h : hyps) out.push_back(tgt_vocab.tokens(h.tokens));
  return out;
}

TranslationResult train_translation(nn::EncoderDecoder& model, const TranslationConfig& c, const TranslationData& d,
                                    const Progress& progress, const std::atomic<bool>* stop) {
  check_config(c);
  const auto held_out_exact = [&] {
    return exact_match(translate(model, d, d.test_batch, Search::greedy, nn::DecodingMode::cached), d.test.french);
  };
  return train_seq2seq(model, c, d.train_batch, d.tgt_vocab->pad(), held_out_exact, false, progress, stop);
}

TranslationResult train_seq2seq(nn::EncoderDecoder& model, const Seq2SeqConfig& c, const text::Seq2SeqBatch& train,
                                int64_t pad, const std::function<double()>& held_out_exact, bool trim,
                                const Progress& progress, const std::atomic<bool>* stop) {
  check_seq2seq_config(c, "train_seq2seq");
  optim::AdamW opt(model.parameters(), {.lr = c.lr, .weight_decay = c.weight_decay});
  const auto schedule = optim::warmup_cosine_schedule(c.lr, std::min(c.warmup, c.steps), c.steps, c.min_lr);
  Generator order(c.seed * 7919 + 1);
  std::vector<text::Seq2SeqBatch> epoch;
  size_t next = 0;
  TranslationResult r;
  auto evaluate = [&] {
    model.eval();
    const double e = held_out_exact();
    model.train();
    return e;
  };
  const auto start = std::chrono::steady_clock::now();
  {  // step 0: the loss before any update, without dropout, over the
     // training pairs (at most 4096 of them, spread evenly over the set)
    NoGradGuard no_grad;
    model.eval();
    constexpr int64_t kMost = 4096;
    std::vector<int64_t> rows;
    for (int64_t i = 0; i < std::min(train.size(), kMost); ++i) rows.push_back(i * train.size() / std::min(train.size(), kMost));
    // In chunks of 512 pairs, each loss weighted by its count of real
    // labels, so a stop signal is seen within one chunk's forward (the
    // whole 4096 took seconds on 2 busy cores).
    constexpr int64_t kChunk = 512;
    double total = 0;
    int64_t labels = 0;
    for (int64_t at = 0; at < static_cast<int64_t>(rows.size()); at += kChunk) {
      if (stop && stop->load()) sg::fail("train_seq2seq: stopped before its first step");
      const std::vector<int64_t> part(rows.begin() + at,
                                      rows.begin() + std::min<int64_t>(at + kChunk, static_cast<int64_t>(rows.size())));
      const text::Seq2SeqBatch b = text::select_rows(train, part);
      int64_t real = 0;
      for (int64_t id : b.labels.to_vector<int64_t>()) real += id != pad;
      total += nn::sequence_loss(model.forward(b.src, b.dec_input, b.src_valid_lens), b.labels, pad).item<double>() *
               static_cast<double>(real);
      labels += real;
    }
    r.curve.push_back({0, labels > 0 ? total / static_cast<double>(labels) : 0.0, evaluate()});
  }
  model.train();
  for (int64_t step = 1; step <= c.steps; ++step) {
    if (stop && stop->load()) sg::fail("train_seq2seq: stopped before step ", step, " of ", c.steps);
    if (next == epoch.size()) {
      epoch = text::shuffled_minibatches(train, c.batch, order), next = 0;
      if (trim)
        for (text::Seq2SeqBatch& b : epoch) b = text::trim_padding(b);
    }
    const text::Seq2SeqBatch& b = epoch[next++];
    opt.zero_grad();
    const Tensor loss = nn::sequence_loss(model.forward(b.src, b.dec_input, b.src_valid_lens), b.labels, pad);
    backward(loss);
    if (c.clip > 0) optim::clip_grad_norm(model.parameters(), c.clip);
    opt.set_lr(schedule(opt.step_count()));
    opt.step();
    r.step_loss.push_back(loss.item<double>());
    if (step % c.eval_every == 0 || step == c.steps) {
      r.curve.push_back({step, r.step_loss.back(), evaluate()});
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (progress)
        progress(step, c.steps, r.step_loss.back(), r.curve.back().exact, 0,
                 elapsed / static_cast<double>(step) * static_cast<double>(c.steps - step));
    }
  }
  model.eval();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::vector<DecodingRow> evaluate_decodings(const nn::EncoderDecoder& model, const TranslationConfig& c,
                                            const TranslationData& d, const std::atomic<bool>* stop) {
  std::vector<DecodingRow> rows;
  for (Search s : {Search::greedy, Search::beam})
    for (nn::DecodingMode m : {nn::DecodingMode::cached, nn::DecodingMode::d2l}) {
      if (stop && stop->load()) sg::fail("evaluate_decodings: stopped after ", rows.size(), " of 4 decodings");
      DecodingRow row{s, m, {}, {}, 0};
      const auto start = std::chrono::steady_clock::now();
      row.preds = translate(model, *d.tgt_vocab, d.test_batch, s, m, c.beam, 0, stop);
      row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      row.scores = score(row.preds, d.test.french);
      rows.push_back(std::move(row));
    }
  return rows;
}

std::string search_name(Search s, int64_t beam) {
  return s == Search::greedy ? "greedy" : "beam " + std::to_string(beam);
}

std::string mode_name(nn::DecodingMode m) {
  return m == nn::DecodingMode::cached ? "cached, position t" : "d2l, position 0";
}

const std::vector<int64_t>& tricky_numbers() {
  static const std::vector<int64_t> n = {21,   71,   80,    81,    91,    97,    100,    101,    180,    200,    201,
                                         280,  391,  571,   780,   999,   1000,  1001,   1080,   2000,   21000,  71071,
                                         80000, 80080, 91000, 100000, 200000, 200200, 201000, 280000, 999999};
  return n;
}

std::vector<int64_t> tricky_held_out(const TranslationData& d, size_t count) {
  std::vector<int64_t> tricky;
  for (int64_t n : d.test.numbers) {
    const int64_t last = n % 100;
    if ((n > 100 && last <= 1) || (last % 10 == 1 && last >= 21 && last <= 71) || last >= 70) tricky.push_back(n);
  }
  if (tricky.size() <= count) return tricky;
  std::vector<int64_t> picked;
  for (size_t i = 0; i < count; ++i) picked.push_back(tricky[i * tricky.size() / count]);
  return picked;
}

}  // namespace sg::study
