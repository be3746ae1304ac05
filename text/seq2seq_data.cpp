#include "text/seq2seq_data.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace sg::text {

std::vector<int64_t> truncate_pad(std::vector<int64_t> ids, int64_t num_steps, int64_t pad) {
  if (num_steps < 1) fail("truncate_pad: num_steps must be at least 1, got ", num_steps);
  ids.resize(static_cast<size_t>(num_steps), pad);  // drops the tail, or pads
  return ids;
}

namespace {

int64_t count_not(const std::vector<int64_t>& row, int64_t pad) {
  return static_cast<int64_t>(std::count_if(row.begin(), row.end(), [&](int64_t v) { return v != pad; }));
}

}  // namespace

Seq2SeqBatch build_batch(const std::vector<Tokens>& src, const std::vector<Tokens>& tgt,
                         const Vocab& src_vocab, const Vocab& tgt_vocab, int64_t num_steps) {
  if (src.size() != tgt.size())
    fail("build_batch: ", src.size(), " source sentences but ", tgt.size(), " targets");
  if (src.empty()) fail("build_batch: no sentence pairs");
  if (num_steps < 1) fail("build_batch: num_steps must be at least 1, got ", num_steps);
  const int64_t B = static_cast<int64_t>(src.size()), T = num_steps;
  const int64_t src_pad = src_vocab.pad(), src_eos = src_vocab.eos();
  const int64_t tgt_pad = tgt_vocab.pad(), tgt_eos = tgt_vocab.eos(), bos = tgt_vocab.bos();
  std::vector<int64_t> s, s_len, d, l, l_len;
  s.reserve(static_cast<size_t>(B * T));
  d.reserve(static_cast<size_t>(B * T));
  l.reserve(static_cast<size_t>(B * T));
  for (size_t i = 0; i < src.size(); ++i) {
    std::vector<int64_t> x = src_vocab.ids(src[i]), y = tgt_vocab.ids(tgt[i]);
    x.push_back(src_eos);
    y.push_back(tgt_eos);
    x = truncate_pad(std::move(x), T, src_pad);
    y = truncate_pad(std::move(y), T, tgt_pad);
    s.insert(s.end(), x.begin(), x.end());
    s_len.push_back(count_not(x, src_pad));
    d.push_back(bos);
    d.insert(d.end(), y.begin(), y.end() - 1);
    l.insert(l.end(), y.begin(), y.end());
    l_len.push_back(count_not(y, tgt_pad));
  }
  return {from_vector(s, {B, T}), from_vector(s_len, {B}), from_vector(d, {B, T}),
          from_vector(l, {B, T}), from_vector(l_len, {B})};
}

namespace {

// (N, ...) -> (rows.size(), ...), rows already checked.
Tensor take_rows(const Tensor& t, const std::vector<int64_t>& rows) {
  const int64_t width = t.dim() == 2 ? t.size(1) : 1;
  const int64_t* in = t.data<int64_t>();
  std::vector<int64_t> out;
  out.reserve(rows.size() * static_cast<size_t>(width));
  for (int64_t r : rows) out.insert(out.end(), in + r * width, in + (r + 1) * width);
  Shape shape = t.shape();
  shape[0] = static_cast<int64_t>(rows.size());
  return from_vector(out, shape);
}

}  // namespace

Seq2SeqBatch select_rows(const Seq2SeqBatch& all, const std::vector<int64_t>& rows) {
  if (rows.empty()) fail("select_rows: no rows asked for (the batch has ", all.size(), ")");
  for (int64_t r : rows)
    if (r < 0 || r >= all.size()) fail("select_rows: row ", r, " is outside the batch's rows 0..", all.size() - 1);
  return {take_rows(all.src, rows), take_rows(all.src_valid_lens, rows), take_rows(all.dec_input, rows),
          take_rows(all.labels, rows), take_rows(all.tgt_valid_lens, rows)};
}

namespace {

// (B, T) -> (B, width): each row's first `width` columns.
Tensor first_columns(const Tensor& t, int64_t width) {
  const int64_t B = t.size(0), T = t.size(1);
  const int64_t* in = t.data<int64_t>();
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(B * width));
  for (int64_t r = 0; r < B; ++r) out.insert(out.end(), in + r * T, in + r * T + width);
  return from_vector(out, {B, width});
}

int64_t longest(const Tensor& lens) {
  const std::vector<int64_t> v = lens.to_vector<int64_t>();
  return std::max<int64_t>(1, *std::max_element(v.begin(), v.end()));  // one column even when all are empty
}

}  // namespace

Seq2SeqBatch trim_padding(const Seq2SeqBatch& b) {
  if (!b.src.defined() || b.size() == 0) fail("trim_padding: an empty batch");
  const int64_t S = longest(b.src_valid_lens), T = longest(b.tgt_valid_lens);
  if (S > b.src.size(1) || T > b.labels.size(1))
    fail("trim_padding: valid lengths up to ", S, " and ", T, " for a batch of ", b.src.size(1), " and ",
         b.labels.size(1), " steps");
  return {first_columns(b.src, S), b.src_valid_lens, first_columns(b.dec_input, T), first_columns(b.labels, T),
          b.tgt_valid_lens};
}

std::vector<std::vector<int64_t>> shuffled_batches(int64_t count, int64_t batch_size, Generator& gen) {
  if (count < 1) fail("shuffled_batches: needs at least one example, got count ", count);
  if (batch_size < 1) fail("shuffled_batches: batch_size must be at least 1, got ", batch_size);
  std::vector<int64_t> order(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) order[static_cast<size_t>(i)] = i;
  for (int64_t i = count - 1; i > 0; --i)
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(gen.randint(0, i + 1))]);
  std::vector<std::vector<int64_t>> batches;
  for (int64_t start = 0; start < count; start += batch_size)
    batches.emplace_back(order.begin() + start, order.begin() + std::min(count, start + batch_size));
  return batches;
}

std::vector<Seq2SeqBatch> shuffled_minibatches(const Seq2SeqBatch& all, int64_t batch_size, Generator& gen) {
  std::vector<Seq2SeqBatch> out;
  for (const std::vector<int64_t>& rows : shuffled_batches(all.size(), batch_size, gen))
    out.push_back(select_rows(all, rows));
  return out;
}

}  // namespace sg::text
