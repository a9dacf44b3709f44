#pragma once
// The op-timing pass: one op list (a layer's forward, backward or recompute pass, the
// embedding, the LM head) for one micro-batch on one GPU, timed into the PassTimes that TP
// overlap needs: compute kernels, and every TP/CP collective under the overlap regime it runs in.
#include <vector>

#include "cost_context.hpp"
#include "megasim/model/layer_ops.hpp"
#include "tp_overlap.hpp"

namespace megasim {

// `host_s_per_launch`: the host time each kernel launch of this pass costs
// (host_s_per_launch(c, layer kind), cost_context.hpp).
PassTimes time_ops(const Context& c, const std::vector<LayerOp>& ops, double host_s_per_launch);

}  // namespace megasim
