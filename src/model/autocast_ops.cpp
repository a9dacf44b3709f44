// The casts torch.autocast adds when the parameters stay FP32 (system.autocast_fp32_weights:
// DDP or single-GPU PyTorch under autocast, FSDP with an FP32 param_dtype). Measured on the
// lent H100 (bench/data/h100-eager-autocast-layer.json, tools/measure/eager_autocast_layer_h200.py):
// an MPT block runs 13-21% longer than with BF16 weights.
//
// Byte counts, per the autocast rules (linear/matmul run in BF16, layer_norm in FP32):
//   forward:  every linear casts its FP32 weight to BF16 (read 4, write 2 bytes per parameter);
//             every norm casts its BF16 input to FP32 (read 2, write 4), normalises in FP32
//             (4 more bytes per element than in BF16) and the next linear casts the FP32
//             output back (read 4, write 2): 16 bytes per element of the norm's input.
//   backward: every weight gradient is cast from BF16 to FP32 (read 2, write 4 per parameter);
//             every norm's gradient comes back through the same three steps: the output cast's
//             backward (read 2, write 4), the FP32 norm backward (6 more than in BF16) and the
//             input cast's backward (read 4, write 2): 18 bytes per element.
// Checked against the measurement (tests/unit/exec/step_costs_test.cpp): the forward overheads of
// the three measured blocks land within 4%; the backward's 9-20% under (the rest unexplained).
#include <string>
#include <vector>

#include "op_builders.hpp"

namespace megasim::model_detail {

namespace {

constexpr double kWeightCastBytesPerParam = 6.0;  // FP32 -> BF16 weight, or BF16 -> FP32 gradient
constexpr double kNormForwardBytesPerElement = 16.0;
constexpr double kNormBackwardBytesPerElement = 18.0;

}  // namespace

void add_autocast_casts(std::vector<LayerOp>& ops, const Dims& x, bool backward) {
  int norms = 0;
  for (const LayerOp& op : ops) norms += op.kind == OpKind::Norm ? 1 : 0;
  const LinearWeights w = linear_weights(ops, backward);
  if (w.linears > 0) {
    ops.push_back(mem(backward ? "autocast_weight_grad_casts" : "autocast_weight_casts", OpKind::Elementwise,
                      kWeightCastBytesPerParam * w.total(), w.linears));
    // The backward's are BF16 -> FP32 casts, PyTorch's slower upcast kernel.
    if (backward) ops.back().upcast_bytes = ops.back().bytes;
  }
  if (norms > 0) {
    const double elems = dd(x.tokens) * dd(x.h) / (x.sp ? dd(x.t) : 1.0);
    ops.push_back(mem(backward ? "autocast_norm_fp32_bwd" : "autocast_norm_fp32", OpKind::Elementwise,
                      (backward ? kNormBackwardBytesPerElement : kNormForwardBytesPerElement) * elems * norms,
                      2 * norms));
  }
}

}  // namespace megasim::model_detail
