// Draws the autograd graph of one multi-head attention layer's forward: the
// ops backward() will walk, the shape of every intermediate tensor, and the
// parameters by name. Writes Graphviz DOT (sg::to_dot), prints it, and renders
// it to SVG when Graphviz's `dot` program is installed.
//
//   attention_graph [--out DIR]       writes DIR/attention.dot (and .svg)
#include <smallgrad.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include <unistd.h>

#include "cli.hpp"

namespace {

// path inside single quotes for the shell.
std::string shell_quoted(const std::string& path) {
  std::string s = "'";
  for (char c : path) s += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return s + "'";
}

int draw(const std::string& out_dir) {
  {
    examples::Outputs out(out_dir, "--out");  // checked before any work
    out.expect("attention.dot");
    out.expect("attention.svg");
    // Self-attention over X: 2 sequences of 3 tokens, 8 hiddens, 2 heads,
    // the second sequence 2 tokens long (valid_lens), no dropout.
    sg::manual_seed(0);
    sg::nn::MultiHeadAttention attention(8, 2, 0.0);
    const sg::Tensor X = sg::randn({2, 3, 8});
    const sg::Tensor valid_lens = sg::from_vector(std::vector<int64_t>{3, 2}, {2});
    const sg::Tensor Y = attention.forward(X, X, X, valid_lens);

    sg::nn::NamedTensors names = attention.named_parameters();  // "W_q.weight", ...
    names.emplace_back("X", X);
    const std::string dot = sg::to_dot(Y, names);
    std::cout << dot << "\n";

    out.write("attention.dot", dot);
    out.commit();
  }
  const std::string dot_path = out_dir + "/attention.dot", svg_path = out_dir + "/attention.svg";
  std::cout << "wrote " << dot_path << "\n";

    // Rendering is optional: nothing here needs Graphviz to build or run.
  if (std::system("command -v dot > /dev/null 2>&1") != 0) {
    std::cout << "Graphviz's dot is not installed (Debian: apt-get install graphviz); then run\n  dot -Tsvg "
              << dot_path << " -o " << svg_path << "\n";
    return 0;
  }
  // dot writes a temporary name, renamed into place when it succeeds.
  const std::string tmp = out_dir + "/.attention.svg.tmp-" + std::to_string(::getpid());
  const std::string render = "dot -Tsvg " + shell_quoted(dot_path) + " -o " + shell_quoted(tmp);
  if (std::system(render.c_str()) != 0 || std::rename(tmp.c_str(), svg_path.c_str()) != 0) {
    std::remove(tmp.c_str());
    sg::fail("attention_graph: rendering '", svg_path, "' with Graphviz failed ('", render, "')");
  }
  std::cout << "wrote " << svg_path << " (open it in a browser)\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  examples::Flags flags{"Draw the autograd graph of a MultiHeadAttention forward as Graphviz DOT (and SVG)."};
  std::string out = "out/attention_graph";
  flags.folder("--out", out, "output folder for attention.dot (and attention.svg when Graphviz is installed)");
  return examples::run(flags, argc, argv, [&] { return draw(out); });
}
