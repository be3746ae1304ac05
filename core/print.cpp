// Printing: tensor([[...]], shape=(2, 3), dtype=float32). Tensors of more
// than 1000 elements show the first and last 3 entries of each long axis.
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

#include "core/tensor.hpp"

namespace sg {
namespace {

constexpr int64_t kSummarizeAbove = 1000;
constexpr int64_t kEdge = 3;

struct Printer {
  std::ostream& os;
  const Shape& shape;
  bool summarize;
  bool scientific = false;
  std::vector<double> values;  // all values as double, row-major
  bool is_int;
  std::vector<int64_t> ints;  // int64 tensors' exact values (a double holds only 53 bits)

  std::string format(double v) const {
    char buf[64];
    if (is_int)
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    else if (std::isnan(v) || std::isinf(v))
      std::snprintf(buf, sizeof buf, "%s", std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
    else
      std::snprintf(buf, sizeof buf, scientific ? "%.4e" : "%.4f", v);
    return buf;
  }

  void print(size_t axis, int64_t offset, int indent) {
    if (axis == shape.size()) {
      if (is_int)
        os << ints[static_cast<size_t>(offset)];
      else
        os << format(values[static_cast<size_t>(offset)]);
      return;
    }
    const int64_t n = shape[axis];
    int64_t stride = 1;
    for (size_t i = axis + 1; i < shape.size(); ++i) stride *= shape[i];
    os << '[';
    for (int64_t i = 0; i < n; ++i) {
      if (summarize && n > 2 * kEdge && i == kEdge) {
        os << "...";
        i = n - kEdge - 1;
        if (axis + 1 == shape.size()) os << ", ";
        else os << ",\n" << std::string(static_cast<size_t>(indent + 1), ' ');
        continue;
      }
      print(axis + 1, offset + i * stride, indent + 1);
      if (i + 1 < n) {
        if (axis + 1 == shape.size()) os << ", ";
        else os << ',' << std::string(shape.size() - axis - 1, '\n') << std::string(static_cast<size_t>(indent + 1), ' ');
      }
    }
    os << ']';
  }
};

}  // namespace

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "tensor(undefined)";
  Printer p{os, t.shape(), t.numel() > kSummarizeAbove, false, t.to_vector<double>(),
            t.dtype() == int64, {}};
  if (p.is_int) p.ints = t.to_vector<int64_t>();
  double biggest = 0, smallest = INFINITY;
  for (double v : p.values)
    if (std::isfinite(v) && v != 0) biggest = std::max(biggest, std::fabs(v)), smallest = std::min(smallest, std::fabs(v));
  p.scientific = biggest >= 1e5 || smallest < 1e-4;
  os << "tensor(";
  p.print(0, 0, 7);
  os << ", shape=" << t.shape() << ", dtype=" << t.dtype();
  if (t.requires_grad()) os << ", requires_grad";
  return os << ')';
}

std::string to_string(const Tensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

}  // namespace sg
