#pragma once
// Between smallgrad's parameter names and d2l's (Dive into Deep Learning's
// PyTorch classes), for checkpoints that travel between the two.
//
// An EncoderDecoder carries d2l's Seq2Seq names throughout (its encoder is
// built with TransformerEncoderOptions::d2l_names), so its state_dict needs
// no mapping. A standalone TransformerEncoder (the positions study's
// checkpoints) names its blocks "blocks.<i>", d2l's TransformerEncoder
// "blks.block<i>"; every other name is the same.
#include <string>

#include "nn/module.hpp"

namespace sg::checkpoint {

// "blocks.3.attention.W_q.weight" -> "blks.block3.attention.W_q.weight",
// also after a prefix ("encoder.blocks.3." -> "encoder.blks.block3."); a
// name without such a part is returned as it is. from_d2l_name is its inverse.
std::string to_d2l_name(const std::string& name);
std::string from_d2l_name(const std::string& name);

// Every name of the state renamed by to_d2l_name (from_d2l_name); throws if
// two names would become one.
nn::StateDict to_d2l_names(const nn::StateDict& state);
nn::StateDict from_d2l_names(const nn::StateDict& state);

}  // namespace sg::checkpoint
