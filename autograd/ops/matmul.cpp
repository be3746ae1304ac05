// Matrix products. With C = op(A) op(B) and g = dL/dC:
//   d op(A) = g op(B)^T        d op(B) = op(A)^T g
// and a transposed operand takes the transpose of its gradient. The GEMM
// wrapper's transpose flags do every transpose here without a copy.
// Second order: the backward is itself two matrix products, so under
// create_graph (recording on) it calls the recorded sg::matmul and sum_to
// with the same flags; first order keeps the kernels (and the folded GEMM
// for a shared 2-D weight).
#include "autograd/engine.hpp"
#include "autograd/ops/matmul.hpp"
#include "autograd/ops/reduce.hpp"
#include "core/kernels.hpp"

namespace sg {

// a: (..., M, K), b: (..., K, N) -> (..., M, N) (shapes after the optional transposes).
Tensor matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  Tensor out = kernel::matmul(a, b, ta, tb);
  return record("matmul", out, {a, b}, {a.requires_grad() ? b : Tensor(), b.requires_grad() ? a : Tensor()},
                [a, b, ta, tb](const Tensor& g) -> Grads {
    // BEGIN ASSIGNMENT 2: matmul's backward: dL/dA and dL/dB for every transpose flag, summed over broadcast batch axes
    if (grad_enabled()) {  // create_graph: the same products, recorded
      Tensor da, db;
      if (a.requires_grad()) da = sum_to(ta ? matmul(b, g, tb, true) : matmul(g, b, false, !tb), a.shape());
      if (b.requires_grad()) db = sum_to(tb ? matmul(g, a, true, ta) : matmul(a, g, !ta, false), b.shape());
      return {da, db};
    }
    Tensor da, db;
    if (a.requires_grad()) {
      da = ta ? kernel::matmul(b, g, tb, true)     // A stored (K, M): dA = op(B) g^T
              : kernel::matmul(g, b, false, !tb);  // dA = g op(B)^T
      da = kernel::sum_to(da, a.shape());          // undo batch broadcasting
    }
    if (b.requires_grad()) {
      if (b.dim() == 2 && a.dim() > 2 && !ta) {
        // A shared 2-D weight (a Linear layer): fold a's batch axes into rows,
        // one GEMM instead of a batch of them and a sum.
        const int64_t k = a.shape().back(), n = g.shape().back();
        const Tensor a2 = kernel::reshape(a, {-1, k}), g2 = kernel::reshape(g, {-1, n});
        db = tb ? kernel::matmul(g2, a2, true, false) : kernel::matmul(a2, g2, true, false);
      } else {
        db = tb ? kernel::matmul(g, a, true, ta)     // B stored (N, K): dB = g^T op(A)
                : kernel::matmul(a, g, !ta, false);  // dB = op(A)^T g
        db = kernel::sum_to(db, b.shape());
      }
    }
    return {da, db};
    // END ASSIGNMENT 2
  });
}

}  // namespace sg
