#pragma once
// to_dot: the autograd graph behind a tensor as Graphviz DOT text, to look at
// what backward() will walk (micrograd's draw_dot, for tensors).
//
//   sg::Tensor y = layer.forward(x);
//   std::ofstream("graph.dot") << sg::to_dot(y, layer.named_parameters());
//   // then, in a shell: dot -Tsvg graph.dot -o graph.svg
//   // (Graphviz; on Debian: apt-get install graphviz)
//
// Every tensor in the graph is one vertex:
//   * an op's result is an ellipse: the op's name, then its shape and dtype;
//   * a leaf is a box: its name from `named` (a module's named_parameters(),
//     or any {name, tensor} pairs, inputs too), else "leaf"; shape, dtype.
//     Leaves that require grad (parameters) are filled blue, others grey.
// An edge runs from each input to the op that read it, numbered by the
// input's position when the op reads several. The output has a double
// border. Vertices are numbered in the order a walk from the output meets
// them, so the same graph always gives the same text.
//
// Call it before backward(): backward frees the graph (unless retain_graph),
// and to_dot then throws naming the freed op.
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.hpp"

namespace sg {

std::string to_dot(const Tensor& output,
                   const std::vector<std::pair<std::string, Tensor>>& named = {});

}  // namespace sg
