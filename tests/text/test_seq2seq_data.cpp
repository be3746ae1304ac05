// text/seq2seq_data.hpp: truncate_pad, the teacher-forced batch as d2l
// builds it, and one epoch's shuffled minibatches.
#include <catch2/catch.hpp>

#include "text/seq2seq_data.hpp"

#include <algorithm>
#include <set>

using Catch::Contains;
using sg::text::Tokens;
using sg::text::Vocab;
using V = std::vector<int64_t>;

TEST_CASE("truncate_pad keeps the first num_steps ids or pads up to them", "[text]") {
  CHECK(sg::text::truncate_pad({5, 6, 7}, 5, 1) == V{5, 6, 7, 1, 1});
  CHECK(sg::text::truncate_pad({5, 6, 7}, 3, 1) == V{5, 6, 7});
  CHECK(sg::text::truncate_pad({5, 6, 7}, 2, 1) == V{5, 6});
  CHECK(sg::text::truncate_pad({}, 2, 1) == V{1, 1});
  REQUIRE_THROWS_WITH(sg::text::truncate_pad({5}, 0, 1), Contains("truncate_pad") && Contains("got 0"));
}

TEST_CASE("build_batch: <eos> appended, truncated or padded, <bos> + shifted labels, valid lengths", "[text]") {
  const std::vector<Tokens> src = {{"go", "."}, {"i", "lost", "it", "all", "."}, {}};
  const std::vector<Tokens> tgt = {{"va", "!"}, {"j'ai", "perdu"}, {"quoi", "?", "?", "?"}};
  const Vocab sv(src), tv(tgt);
  // sv: <unk> <pad> <bos> <eos> go . i lost it all   ("." twice, then first appearance)
  REQUIRE(sv.idx_to_token() == Tokens{"<unk>", "<pad>", "<bos>", "<eos>", ".", "go", "i", "lost", "it", "all"});
  // tv: <unk> <pad> <bos> <eos> ? va ! j'ai perdu quoi
  REQUIRE(tv.idx_to_token() == Tokens{"<unk>", "<pad>", "<bos>", "<eos>", "?", "va", "!", "j'ai", "perdu", "quoi"});
  const sg::text::Seq2SeqBatch b = sg::text::build_batch(src, tgt, sv, tv, 4);
  CHECK(b.size() == 3);
  CHECK(b.src.shape() == sg::Shape{3, 4});
  CHECK(b.src_valid_lens.shape() == sg::Shape{3});
  CHECK(b.src.dtype() == sg::int64);
  // go . <eos> <pad> | i lost it all (eos cut) | <eos> <pad> <pad> <pad>
  CHECK(b.src.to_vector<int64_t>() == V{5, 4, 3, 1, 6, 7, 8, 9, 3, 1, 1, 1});
  CHECK(b.src_valid_lens.to_vector<int64_t>() == V{3, 4, 1});
  // va ! <eos> <pad> | j'ai perdu <eos> <pad> | quoi ? ? ? (eos cut)
  CHECK(b.labels.to_vector<int64_t>() == V{5, 6, 3, 1, 7, 8, 3, 1, 9, 4, 4, 4});
  CHECK(b.tgt_valid_lens.to_vector<int64_t>() == V{3, 3, 4});
  CHECK(b.dec_input.to_vector<int64_t>() == V{2, 5, 6, 3, 2, 7, 8, 3, 2, 9, 4, 4});
  // Unknown tokens become <unk>.
  const auto u = sg::text::build_batch({{"zzz"}}, {{"va"}}, sv, tv, 2);
  CHECK(u.src.to_vector<int64_t>() == V{0, 3});
}

TEST_CASE("build_batch refuses mismatched, empty and zero-length inputs", "[text][bad_input]") {
  const Vocab v({{"a"}});
  REQUIRE_THROWS_WITH(sg::text::build_batch({{"a"}}, {}, v, v, 4), Contains("1 source sentences but 0 targets"));
  REQUIRE_THROWS_WITH(sg::text::build_batch({}, {}, v, v, 4), Contains("build_batch: no sentence pairs"));
  REQUIRE_THROWS_WITH(sg::text::build_batch({{"a"}}, {{"a"}}, v, v, 0), Contains("num_steps") && Contains("got 0"));
  const Vocab bare({{"a"}}, {.reserved = {"<pad>", "<eos>"}});
  REQUIRE_THROWS_WITH(sg::text::build_batch({{"a"}}, {{"a"}}, v, bare, 3), Contains("'<bos>'"));
}

TEST_CASE("shuffled minibatches cover every row once, in a seeded order", "[text]") {
  sg::Generator g1(7), g2(7), g3(8);
  const auto a = sg::text::shuffled_batches(10, 4, g1);
  const auto b = sg::text::shuffled_batches(10, 4, g2);
  const auto c = sg::text::shuffled_batches(10, 4, g3);
  CHECK(a == b);
  CHECK(a != c);
  REQUIRE(a.size() == 3);
  CHECK(a[0].size() == 4);
  CHECK(a[2].size() == 2);  // the remainder
  std::vector<int64_t> all;
  for (const auto& batch : a) all.insert(all.end(), batch.begin(), batch.end());
  std::vector<int64_t> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == V{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(all != sorted);  // shuffled (this seed's permutation is not the identity)

  // select_rows takes whole rows of every tensor.
  std::vector<Tokens> src, tgt;
  for (int i = 0; i < 5; ++i) {
    src.push_back({std::string(1, static_cast<char>('a' + i))});
    tgt.push_back(Tokens(static_cast<size_t>(i % 3), "x"));
  }
  const Vocab sv(src), tv(tgt);
  const auto whole = sg::text::build_batch(src, tgt, sv, tv, 3);
  const auto part = sg::text::select_rows(whole, {4, 1});
  CHECK(part.src.to_vector<int64_t>() == V{sv.id("e"), 3, 1, sv.id("b"), 3, 1});
  CHECK(part.tgt_valid_lens.to_vector<int64_t>() == V{2, 2});
  CHECK(part.dec_input.shape() == sg::Shape{2, 3});
  sg::Generator g4(1);
  const auto minibatches = sg::text::shuffled_minibatches(whole, 2, g4);
  REQUIRE(minibatches.size() == 3);
  int64_t rows = 0;
  for (const auto& m : minibatches) rows += m.size();
  CHECK(rows == 5);

  REQUIRE_THROWS_WITH(sg::text::select_rows(whole, {5}), Contains("row 5") && Contains("0..4"));
  REQUIRE_THROWS_WITH(sg::text::select_rows(whole, {}), Contains("no rows"));
  REQUIRE_THROWS_WITH(sg::text::shuffled_batches(10, 0, g1), Contains("batch_size") && Contains("got 0"));
  REQUIRE_THROWS_WITH(sg::text::shuffled_batches(0, 2, g1), Contains("count 0"));
}

TEST_CASE("trim_padding cuts a batch to its longest source and target", "[text]") {
  const std::vector<Tokens> src = {{"a"}, {"a", "b"}, {}};
  const std::vector<Tokens> tgt = {{"x", "y", "z"}, {"x"}, {}};
  const Vocab sv(src), tv(tgt);
  const sg::text::Seq2SeqBatch b = sg::text::build_batch(src, tgt, sv, tv, 6);
  const sg::text::Seq2SeqBatch t = sg::text::trim_padding(b);
  CHECK(t.src.shape() == sg::Shape{3, 3});     // "a b <eos>"
  CHECK(t.labels.shape() == sg::Shape{3, 4});  // "x y z <eos>"
  CHECK(t.dec_input.shape() == sg::Shape{3, 4});
  const V s = b.src.to_vector<int64_t>(), l = b.labels.to_vector<int64_t>(), d = b.dec_input.to_vector<int64_t>();
  const V ts = t.src.to_vector<int64_t>(), tl = t.labels.to_vector<int64_t>(), td = t.dec_input.to_vector<int64_t>();
  for (size_t r = 0; r < 3; ++r) {
    CHECK(V(ts.begin() + r * 3, ts.begin() + r * 3 + 3) == V(s.begin() + r * 6, s.begin() + r * 6 + 3));
    CHECK(V(tl.begin() + r * 4, tl.begin() + r * 4 + 4) == V(l.begin() + r * 6, l.begin() + r * 6 + 4));
    CHECK(V(td.begin() + r * 4, td.begin() + r * 4 + 4) == V(d.begin() + r * 6, d.begin() + r * 6 + 4));
    // Only padding went.
    for (size_t c = 3; c < 6; ++c) CHECK(s[r * 6 + c] == sv.pad());
    for (size_t c = 4; c < 6; ++c) CHECK(l[r * 6 + c] == tv.pad());
  }
  CHECK(t.src_valid_lens.to_vector<int64_t>() == b.src_valid_lens.to_vector<int64_t>());
  CHECK(t.tgt_valid_lens.to_vector<int64_t>() == b.tgt_valid_lens.to_vector<int64_t>());
  REQUIRE_THROWS_WITH(sg::text::trim_padding(sg::text::Seq2SeqBatch{}), Contains("trim_padding: an empty batch"));
}
