// Layer normalisation over the last axis, one fused kernel each way.
// Second order: first order keeps the fused backward kernel. Under
// create_graph (recording on) the backward is the same formula written with
// recorded ops, the mean and 1/std computed again from x with them (the
// saved statistics have no history):
//   xhat = (x - mean) rstd,  gx = g gamma
//   dx = rstd (gx - mean(gx) - xhat mean(gx xhat)),  dgamma = sum(g xhat),  dbeta = sum(g)
#include <cmath>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/ops/layer_norm.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/unary.hpp"
#include "core/kernels.hpp"
#include "core/runtime.hpp"
#include "core/parallel.hpp"
#include "core/kernels/sum.hpp"

namespace sg {

namespace {

// dgamma = sum_rows g * xhat, dbeta = sum_rows g over x, g: (rows, dim).
// One pass over the rows, summed by kernel::sum_rows (leaves of rows, then
// pairwise: accurate over many rows, the same on any thread count); dgamma
// and dbeta side by side in one partial row of 2 * dim.
template <class T>
void param_grads(const T* __restrict x, const T* __restrict g, const T* __restrict mean, const T* __restrict rstd,
                 T* __restrict dgamma, T* __restrict dbeta, int64_t rows, int64_t dim) {
  // BEGIN ASSIGNMENT 4: param_grads: dgamma += g * xhat and dbeta += g, summed over the rows
  std::vector<T> sums(static_cast<size_t>(2 * dim));
  kernel::sum_rows(rows, 2 * dim, sums.data(), [&](int64_t r, T* __restrict acc) {
    const T *__restrict xr = x + r * dim, *__restrict gr = g + r * dim;
    T *__restrict dgamma = acc, *__restrict dbeta = acc + dim;
    const T m = mean[r], s = rstd[r];
    for (int64_t d = 0; d < dim; ++d) {
      dgamma[d] += gr[d] * (xr[d] - m) * s;
      dbeta[d] += gr[d];
    }
  });
  for (int64_t d = 0; d < dim; ++d) {
    dgamma[d] += sums[static_cast<size_t>(d)];
    dbeta[d] += sums[static_cast<size_t>(dim + d)];
  }
  // END ASSIGNMENT 4
}

// One row: y = (x - mean) * rstd * gamma + beta; returns mean and rstd. A
// function with restrict pointers, like input_grad_row below.
template <class T>
void normalize_row(const T* __restrict x, const T* __restrict gamma, const T* __restrict beta,
                   T* __restrict y, int64_t dim, T eps, T& mean, T& rstd) {
  // BEGIN ASSIGNMENT 4: normalize_row: one row's mean, rstd = 1 / sqrt(var + eps) and y = xhat * gamma + beta
  // omp simd: the sums run in vector lanes (plain -O3 keeps them in order,
  // one lane). A row is short (64-1024 values: a chain of dim / 16 additions
  // per lane with AVX-512, dim / 4 with SSE), so float lanes are accurate to
  // a few ulps here, while the pairwise sums of core/kernels/sum.hpp and
  // double lanes both slowed the training step's layer norm (docs/results.md,
  // "Accurate sums"). The long sums, over the rows, are pairwise (param_grads).
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t d = 0; d < dim; ++d) s += x[d];
  const T m = s / T(dim);
  T v = 0;
#pragma omp simd reduction(+ : v)
  for (int64_t d = 0; d < dim; ++d) v += (x[d] - m) * (x[d] - m);
  const T inv = T(1) / std::sqrt(v / T(dim) + eps);
#pragma omp simd
  for (int64_t d = 0; d < dim; ++d) y[d] = (x[d] - m) * inv * gamma[d] + beta[d];
  mean = m;
  rstd = inv;
  // END ASSIGNMENT 4
}

// One row of dx = rstd * (gx - mean_d(gx) - xhat * mean_d(gx * xhat)), with
// xhat = (x - m) * s and gx = g * gamma. A function with restrict pointers:
// in the parallel loop's closure the stores to dx could alias every captured
// value, which kept the loops scalar.
template <class T>
void input_grad_row(const T* __restrict x, const T* __restrict g, const T* __restrict gamma,
                    T* __restrict dx, int64_t dim, T m, T s) {
  // BEGIN ASSIGNMENT 4: input_grad_row: dx = rstd * (gx - mean(gx) - xhat * mean(gx * xhat)), gx = g * gamma
  // Vector lanes, as in normalize_row.
  T sum_gx = 0, sum_gx_xhat = 0;
#pragma omp simd reduction(+ : sum_gx, sum_gx_xhat)
  for (int64_t d = 0; d < dim; ++d) {
    const T xhat = (x[d] - m) * s, gx = g[d] * gamma[d];
    sum_gx += gx;
    sum_gx_xhat += gx * xhat;
  }
  const T mean_gx = sum_gx / T(dim), mean_gx_xhat = sum_gx_xhat / T(dim);
#pragma omp simd
  for (int64_t d = 0; d < dim; ++d)
    dx[d] = s * (g[d] * gamma[d] - mean_gx - (x[d] - m) * s * mean_gx_xhat);
  // END ASSIGNMENT 4
}

}  // namespace

// x: (..., D) viewed as (N, D); gamma, beta: (D) -> y: (..., D).
//   mean[n] = sum_d x / D,  rstd[n] = 1 / sqrt(sum_d (x - mean)^2 / D + eps)
//   y = (x - mean) * rstd * gamma + beta
// mean and rstd (N values each) are kept for the backward pass.
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  if (x.dim() == 0) fail("layer_norm: needs at least one axis, got a scalar");
  const int64_t dim = x.shape().back();
  if (gamma.shape() != Shape{dim} || beta.shape() != Shape{dim})
    fail("layer_norm: gamma ", gamma.shape(), " and beta ", beta.shape(), " must be (", dim,
         ") for input ", x.shape());
  check_same_dtype(x, gamma, "layer_norm");
  check_same_dtype(x, beta, "layer_norm");
  if (!(eps > 0)) fail("layer_norm: eps must be positive, got ", eps);
  const int64_t rows = dim == 0 ? 0 : x.numel() / dim;
  Tensor out = empty(x.shape(), x.dtype());
  Tensor mean = empty({rows}, x.dtype()), rstd = empty({rows}, x.dtype());
  visit_floating(x, "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    const T *in = x.data<T>(), *gm = gamma.data<T>(), *bt = beta.data<T>();
    T *o = out.data<T>(), *mu = mean.data<T>(), *rs = rstd.data<T>();
    parallel_for(rows, rows >= kParallelRows && x.numel() >= kParallelElementwise / 4, [&](int64_t r) {
      normalize_row(in + r * dim, gm, bt, o + r * dim, dim, static_cast<T>(eps), mu[r], rs[r]);
    });
  });

  // With xhat = (x - mean) * rstd and gx = g * gamma, per row:
  //   dx = rstd * (gx - mean_d(gx) - xhat * mean_d(gx * xhat))
  //   dgamma = sum_rows g * xhat,  dbeta = sum_rows g
  return record("layer_norm", out, {x, gamma, beta}, {x, gamma}, [x, gamma, beta, mean, rstd, eps](const Tensor& g) -> Grads {
    if (grad_enabled()) {
      const Tensor xc = sub(x, sg::mean(x, -1, true));
      const Tensor r = pow(affine(sg::mean(mul(xc, xc), -1, true), 1.0, eps), -0.5);
      const Tensor xhat = mul(xc, r), gx = mul(g, gamma);
      return {mul(r, sub(sub(gx, sg::mean(gx, -1, true)), mul(xhat, sg::mean(mul(gx, xhat), -1, true)))),
              sum_to(mul(g, xhat), gamma.shape()), sum_to(g, beta.shape())};
    }
    const int64_t dim = x.shape().back(), rows = mean.numel();
    Tensor dx = empty(x.shape(), x.dtype());
    Tensor dgamma = zeros_like(gamma), dbeta = zeros_like(beta);
    visit_floating(x, "layer_norm", [&](auto tag) {
      using T = decltype(tag);
      const T *in = x.data<T>(), *gm = gamma.data<T>(), *gp = g.data<T>();
      const T *mu = mean.data<T>(), *rs = rstd.data<T>();
      T *dxp = dx.data<T>(), *dg = dgamma.data<T>(), *db = dbeta.data<T>();
      parallel_for(rows, rows >= kParallelRows && x.numel() >= kParallelElementwise / 4, [&](int64_t r) {
        input_grad_row(in + r * dim, gp + r * dim, gm, dxp + r * dim, dim, mu[r], rs[r]);
      });
      param_grads(in, gp, mu, rs, dg, db, rows, dim);
    });
    return {dx, dgamma, dbeta};
  });
}

}  // namespace sg
