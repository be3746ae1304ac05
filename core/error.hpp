#pragma once
// Errors: every bad input throws sg::Error whose message names the operation
// and every shape or value involved, e.g.
//   matmul: cannot multiply (2, 3) by (4, 5): inner dimensions 3 and 4 differ
#include <cstdint>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace sg {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A tensor's shape: a vector of sizes, one per axis. Its own type (not a
// bare std::vector) so that `std::cout << t.shape()` finds the printer below.
struct Shape : std::vector<int64_t> {
  using std::vector<int64_t>::vector;
  Shape() = default;
  Shape(const std::vector<int64_t>& v) : std::vector<int64_t>(v) {}  // NOLINT: implicit on purpose
};

// A shape (or any list of sizes) prints as "(2, 3)"; a scalar's empty shape as "()".
inline std::ostream& operator<<(std::ostream& os, const std::vector<int64_t>& shape) {
  os << '(';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  return os << ')';
}
inline std::ostream& operator<<(std::ostream& os, const Shape& shape) {
  return os << static_cast<const std::vector<int64_t>&>(shape);
}

namespace detail {
// cat("matmul: ", a.shape(), " by ", b.shape()) -> one string.
template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

// Throws sg::Error with the pieces concatenated: fail("sum: axis ", axis, " out of range").
template <class... Args>
[[noreturn]] void fail(const Args&... args) {
  throw Error(detail::cat(args...));
}

}  // namespace sg
