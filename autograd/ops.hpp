#pragma once
// The differentiable ops (namespace sg), for programs that use the library:
// a list of the ops' own headers. Each op computes its value with the
// graph-free kernels in sg::kernel and, when an input requires grad, records
// a node whose backward is written right under the forward in the op's file;
// autograd/ops/X.hpp declares what autograd/ops/X.cpp defines:
//
//   arithmetic     add, sub, mul, div, affine (scalar), the operators
//   unary          exp, log, sqrt, tanh, sigmoid, relu, abs, pow
//   gelu           gelu (exact and tanh forms)
//   softplus       softplus
//   reduce         sum, mean, max
//   shape          reshape, permute, transpose, slice, concat
//   matmul         matmul (2-D and batched)
//   linear         linear (x W^T + b)
//   head_products  head_scores, head_pool (attention's per-head products, heads read in place)
//   softmax        softmax, log_softmax, masked_softmax
//   embedding      embedding (row gather, scatter-add backward)
//   rope           rope (rotary position embedding)
//   layer_norm     layer_norm (fused)
//   dropout        dropout (counter-based mask, never stored)
//   cross_entropy  cross_entropy (fused log-softmax)
//   compare        eq, ne, lt, le, gt, ge (masks, no gradient)
//
// The library and its tests include only the op headers they call, so that
// changing one op rebuilds only the files that call it: they are compiled
// with SMALLGRAD_INSIDE defined, and this header refuses them.
#ifdef SMALLGRAD_INSIDE
#error "autograd/ops.hpp is the aggregate for programs that use smallgrad: inside the library and its tests, include the op's own header, autograd/ops/X.hpp (X.cpp defines the op)"
#endif
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/unary.hpp"
#include "autograd/ops/gelu.hpp"
#include "autograd/ops/softplus.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/shape.hpp"
#include "autograd/ops/matmul.hpp"
#include "autograd/ops/linear.hpp"
#include "autograd/ops/head_products.hpp"
#include "autograd/ops/softmax.hpp"
#include "autograd/ops/embedding.hpp"
#include "autograd/ops/rope.hpp"
#include "autograd/ops/layer_norm.hpp"
#include "autograd/ops/dropout.hpp"
#include "autograd/ops/cross_entropy.hpp"
#include "autograd/ops/compare.hpp"
