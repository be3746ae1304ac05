#pragma once
// The three element types. float32 is the default; float64 is for gradient
// checks; int64 holds token ids, labels and valid lengths (never gradients).
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <type_traits>

#include "core/error.hpp"

namespace sg {

enum class DType { float32, float64, int64 };

inline constexpr DType float32 = DType::float32;
inline constexpr DType float64 = DType::float64;
inline constexpr DType int64 = DType::int64;

inline const char* dtype_name(DType d) {
  switch (d) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::int64: return "int64";
  }
  return "?";
}
inline std::ostream& operator<<(std::ostream& os, DType d) { return os << dtype_name(d); }

inline size_t dtype_size(DType d) { return d == DType::float32 ? 4 : 8; }
inline bool is_floating(DType d) { return d != DType::int64; }

// The DType of a C++ element type: dtype_of<float> == float32.
template <class T>
inline constexpr DType dtype_of = std::is_same_v<T, float>    ? DType::float32
                                  : std::is_same_v<T, double> ? DType::float64
                                                              : DType::int64;

// Calls f with a value of the element type of d: f(float{}), f(double{}) or
// f(int64_t{}). Kernels are templates, and this is their one dispatch point.
template <class F>
decltype(auto) visit_dtype(DType d, F&& f) {
  switch (d) {
    case DType::float32: return f(float{});
    case DType::float64: return f(double{});
    default: return f(int64_t{});
  }
}

// As visit_dtype, for kernels that only make sense on floating point; int64
// throws naming the op.
template <class F>
decltype(auto) visit_floating(DType d, const char* op, F&& f) {
  switch (d) {
    case DType::float32: return f(float{});
    case DType::float64: return f(double{});
    default: fail(op, ": needs a float32 or float64 tensor, got int64");
  }
}

}  // namespace sg
