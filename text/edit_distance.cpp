#include "text/edit_distance.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

namespace sg::text {

int64_t edit_distance(const Tokens& a, const Tokens& b) {
  // row[j]: the distance between a's first i tokens and b's first j, one row i at a time.
  std::vector<int64_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), int64_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    int64_t diagonal = row[0];  // (i - 1, j - 1)
    row[0] = static_cast<int64_t>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int64_t above = row[j];  // (i - 1, j)
      row[j] = std::min({above + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace sg::text
