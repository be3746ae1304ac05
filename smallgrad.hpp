#pragma once
// smallgrad: the one header a user includes.
//
//   #include <smallgrad.hpp>
//
// core/          tensors, dtypes, errors, the allocator, generators, threads
// core/kernels/  graph-free kernels (sg::kernel): elementwise, reductions, softmax, layout, GEMM
// autograd/      the engine: graph nodes (node.hpp); record, backward, grad, NoGradGuard,
//                anomaly mode (engine.hpp); the profiler
// autograd/ops/  the differentiable ops (sg), one file per family, backward under forward;
//                X.hpp declares what X.cpp defines, autograd/ops.hpp includes them all
// autograd/tools/ what inspects the graph: gradcheck, gradgradcheck, to_dot, jvp/hvp/hessian
// nn/            layers and losses, the encoder-decoder and the GPT (sg::nn)
// optim/         optimizers and learning-rate schedules (sg::optim)
// checkpoint/    safetensors files with checksums, model files and training state (sg::checkpoint)
// parallel/      data-parallel steps on threads (sg::parallel)
// decoding/      greedy and beam search over an encoder-decoder, sampling from a GPT (sg::decoding)
// text/          vocabularies, padded sequence batches, BLEU, edit distance, the CMU
//                dictionary, and the language models' tokenizers: characters and byte-level BPE (sg::text)
// study/ (the positions study, library smallgrad::study) is included on its own
//
// For programs that use the library. The library and its tests include the
// headers they use one by one (an op's own autograd/ops/X.hpp), so this
// header refuses them: they are compiled with SMALLGRAD_INSIDE defined.
#ifdef SMALLGRAD_INSIDE
#error "smallgrad.hpp is the umbrella header for programs that use smallgrad: inside the library and its tests, include the headers you use (an op's own autograd/ops/X.hpp, autograd/engine.hpp, nn/...)"
#endif
#include "core/tensor.hpp"
#include "core/kernels.hpp"
#include "core/kernels/gemm.hpp"
#include "core/random.hpp"
#include "core/runtime.hpp"
#include "core/cpu.hpp"
#include "autograd/node.hpp"
#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "autograd/tools/gradcheck.hpp"
#include "autograd/tools/gradgradcheck.hpp"
#include "autograd/tools/graphviz.hpp"
#include "autograd/tools/functional.hpp"
#include "autograd/profiler.hpp"
#include "nn/module.hpp"
#include "nn/init.hpp"
#include "nn/linear.hpp"
#include "nn/basic.hpp"
#include "nn/attention.hpp"
#include "nn/positional.hpp"
#include "nn/transformer.hpp"
#include "nn/decoder.hpp"
#include "nn/encoder_decoder.hpp"
#include "nn/loss.hpp"
#include "nn/gpt.hpp"
#include "optim/optim.hpp"
#include "checkpoint/safetensors.hpp"
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/names.hpp"
#include "parallel/data_parallel.hpp"
#include "decoding/search.hpp"
#include "decoding/sampling.hpp"
#include "text/vocab.hpp"
#include "text/seq2seq_data.hpp"
#include "text/bleu.hpp"
#include "text/edit_distance.hpp"
#include "text/cmudict.hpp"
#include "text/tokenizer.hpp"
#include "text/char_tokenizer.hpp"
#include "text/bpe.hpp"
