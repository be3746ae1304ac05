#pragma once
// train_gpt's pages: samples.md (what the model wrote at each evaluation)
// and report.html (settings, loss curves, those samples, and an attention
// explorer: every block's and head's weights on a prompt).
#include <string>
#include <vector>

#include "gpt/gpt_files.hpp"

namespace examples::gpt {

std::string samples_md(const std::vector<Evaluation>& history, const std::string& prompt,
                       const std::string& final_sample, uint64_t seed);

std::string report_html(const sg::nn::GPT& model, const sg::text::Tokenizer& tokenizer, const Settings& settings,
                        const std::string& corpus_source, const std::vector<Evaluation>& history,
                        const std::string& final_sample);

}  // namespace examples::gpt
