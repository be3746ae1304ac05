#pragma once
// smallgrad: the one header a user includes.
//
//   #include <smallgrad.hpp>
//
// core/     tensors and graph-free kernels (sg::core), BLIS GEMM, threads
// autograd/ the graph engine, differentiable ops (sg), gradcheck, to_dot, anomaly mode
// nn/       modules, layers, losses, optimizers, checkpoints (sg::nn, sg::optim)
#include "core/tensor.hpp"
#include "core/ops.hpp"
#include "core/gemm.hpp"
#include "core/random.hpp"
#include "core/runtime.hpp"
#include "autograd/node.hpp"
#include "autograd/ops.hpp"
#include "autograd/gradcheck.hpp"
#include "autograd/graphviz.hpp"
#include "autograd/profiler.hpp"
#include "nn/module.hpp"
#include "nn/init.hpp"
#include "nn/linear.hpp"
#include "nn/basic.hpp"
#include "nn/attention.hpp"
#include "nn/positional.hpp"
#include "nn/transformer.hpp"
#include "nn/loss.hpp"
#include "nn/optim.hpp"
#include "nn/checkpoint.hpp"
