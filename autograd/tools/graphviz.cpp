// to_dot: the autograd graph behind a tensor as Graphviz DOT text.
#include "autograd/tools/graphviz.hpp"

#include <sstream>
#include <unordered_map>

#include "autograd/node.hpp"

namespace sg {
namespace {

// s as a DOT string: quotes and backslashes escaped, line breaks as \n.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + '"';
}

}  // namespace

std::string to_dot(const Tensor& output, const std::vector<std::pair<std::string, Tensor>>& named) {
  if (!output.defined()) fail("to_dot: the output tensor is undefined");
  std::unordered_map<const TensorImpl*, std::string> names;
  for (const auto& [name, t] : named)
    if (t.defined()) names.emplace(t.impl(), name);  // the first name given for a tensor wins

  std::ostringstream vertices, edges;
  // Tensor k is vertex "t<k>"; `found` lists them in breadth-first order from
  // the output, and `id` says which tensors already have a number.
  std::vector<Tensor> found{output};
  std::unordered_map<const TensorImpl*, size_t> id{{output.impl(), 0}};
  for (size_t k = 0; k < found.size(); ++k) {
    const Tensor t = found[k];  // a copy: found grows below
    const auto name = names.find(t.impl());
    const std::string prefix = name != names.end() ? name->second + "\n" : "";
    const std::string shape = detail::cat(t.shape(), " ", t.dtype());
    vertices << "  t" << k << " [";
    if (const Node* node = t.node().get()) {
      if (node->released)
        fail("to_dot: the graph through '", node->op, "' (output ", t.shape(),
             ") was freed by backward(); call to_dot before backward, or pass retain_graph = true "
             "to backward");
      vertices << "shape=ellipse, label=" << quoted(prefix + node->op + "\n" + shape);
      for (size_t i = 0; i < node->inputs.size(); ++i) {
        const Tensor& in = node->inputs[i];
        if (!in.defined()) continue;
        const auto [it, fresh] = id.try_emplace(in.impl(), found.size());
        if (fresh) found.push_back(in);
        edges << "  t" << it->second << " -> t" << k;
        if (node->inputs.size() > 1) edges << " [label=\"" << i << "\"]";
        edges << ";\n";
      }
    } else {
      const std::string kind = t.requires_grad() ? "leaf" : "constant";
      vertices << "shape=box, style=filled, fillcolor=\""
               << (t.requires_grad() ? "#cfe2f3" : "#eeeeee") << "\", label="
               << quoted((name != names.end() ? name->second : kind) + "\n" + shape);
    }
    if (k == 0) vertices << ", peripheries=2";
    vertices << "];\n";
  }
  return "digraph autograd {\n"
         "  // sg::to_dot: ellipses are ops (name, output shape and dtype), boxes are leaves\n"
         "  // (blue: requires grad); an edge runs from an input to the op that read it.\n"
         "  node [fontname=\"Helvetica\", fontsize=11];\n"
         "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#555555\"];\n" +
         vertices.str() + edges.str() + "}\n";
}

}  // namespace sg
