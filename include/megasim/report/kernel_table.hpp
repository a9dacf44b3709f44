#pragma once
// `explain --kernels`: every kernel and collective of one transformer layer, one micro-batch,
// this GPU, timed alone, so that a planner can see where a layer's time goes.
#include <ostream>
#include <string>
#include <vector>

#include "megasim/model/layer_ops.hpp"

namespace megasim {

// One row. Compute ops are timed whole (not in TP-overlap chunks); collectives at their serial
// time on the TP (or CP) group, before any overlap hides them (exec's layer_kernel_times).
struct LayerKernelTime {
  std::string pass;  // "forward" | "backward" | "recompute"
  LayerOp op;
  double time_s = 0;
};

// The table: pass, kernel, kind, shape, time and achieved rate, with a total line per pass.
void write_kernel_table(const std::vector<LayerKernelTime>& rows, std::ostream& out);

}  // namespace megasim
