#pragma once
// What a trained encoder's positions look like, and which of the five
// properties a good positional encoding should have it shows, measured on
// the model (the list Kazemnejad gives: a unique code per position,
// distances consistent across lengths, generalising to longer sequences,
// bounded values, deterministic). Compiled in the library
// (study/position_properties.cpp), beside encoder_training.
//
// The position vectors V_i compared, per encoding:
//   sinusoidal, learned  the rows P_i of the table added to the embeddings
//   rotary               R_i u: the rotation of position i applied to a vector
//                        of ones, so V_i . V_j is the score two equal q and k
//                        get at positions i and j (the effective relative kernel)
//   relative             no vector per position: block 0's key vector a_r for
//                        the offset r = clip(j - i), compared with a_0
//   none                 nothing
#include <string>
#include <vector>

#include "study/encoder_training.hpp"

namespace sg::study {

struct PositionView {
  std::string encoding;
  std::string what;  // what `similarity` shows, for a figure's title
  // (N, N) for N = config.positions(): cosine similarity of V_i and V_j
  // (relative: of a_{clip(j - i)} and a_0); empty for none.
  std::vector<std::vector<double>> similarity;
  // The five properties, each a short measured statement.
  std::string unique, consistent, longer, bounded, deterministic;
};

// Measures the encoding of `model` (trained with `c`); acc_longer is the
// run's accuracy on the longer evaluation lengths (property 3 is measured by
// training, not by looking at vectors).
PositionView view_positions(const Model& model, const Config& c, double acc_longer);

// The properties of several encodings as a Markdown table (one row per view).
std::string properties_table(const std::vector<std::pair<std::string, PositionView>>& rows);

}  // namespace sg::study
