// Draws the autograd graph of one multi-head attention layer's forward: the
// ops backward() will walk, the shape of every intermediate tensor, and the
// parameters by name. Writes Graphviz DOT (sg::to_dot), prints it, and renders
// it to SVG when Graphviz's `dot` program is installed.
//
//   attention_graph [--out DIR]       writes DIR/attention.dot (and .svg)
#include <CLI/CLI.hpp>
#include <smallgrad.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace {

// path inside single quotes for the shell.
std::string shell_quoted(const std::string& path) {
  std::string s = "'";
  for (char c : path) s += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return s + "'";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Draw the autograd graph of a MultiHeadAttention forward as Graphviz DOT (and SVG)."};
  std::string out = "out/attention_graph";
  app.add_option("--out", out, "output folder");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << e.what() << "\n\n" << app.help();
    return 2;
  }
  try {
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

    std::filesystem::create_directories(out);
    const std::string dot_path = out + "/attention.dot", svg_path = out + "/attention.svg";
    std::ofstream(dot_path) << dot;
    if (!std::ifstream(dot_path)) sg::fail("attention_graph: cannot write ", dot_path);
    std::cout << "wrote " << dot_path << "\n";

    // Rendering is optional: nothing here needs Graphviz to build or run.
    if (std::system("command -v dot > /dev/null 2>&1") != 0) {
      std::cout << "Graphviz's dot is not installed (Debian: apt-get install graphviz); then run\n  dot -Tsvg "
                << dot_path << " -o " << svg_path << "\n";
      return 0;
    }
    const std::string render = "dot -Tsvg " + shell_quoted(dot_path) + " -o " + shell_quoted(svg_path);
    if (std::system(render.c_str()) != 0) sg::fail("attention_graph: '", render, "' failed");
    std::cout << "wrote " << svg_path << " (open it in a browser)\n";
    return 0;
  } catch (const sg::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
