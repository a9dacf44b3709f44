// Transformer Engine's FP8 casts of a layer's tensors, by recipe (training.fp8_recipe); which
// tensors a layer casts is layer_ops.cpp's.
#include <algorithm>

#include "op_builders.hpp"

namespace megasim::model_detail {

// FP8 only: the cast of a 16-bit tensor of `elems` elements to FP8 plus its transpose (read 2,
// write 1 + 1 bytes per element), as Transformer Engine v2.9 launches it
// (transformer_engine/pytorch/csrc/quantizer.cpp, extensions/cast.cpp split_quantize):
//   delayed     one cast-transpose kernel (scale from the amax history); a grouped linear's
//               experts in one fused multi-tensor kernel (nvte_multi_cast_transpose);
//   tensorwise  current scaling (Float8CurrentScalingQuantizer): zero the amax, an amax pass
//               over the tensor (one more read), the scale, then the cast - four kernels, per
//               expert for a grouped linear (split_quantize fuses delayed scaling only);
//   mxfp8, blockwise  one kernel computing its block scales inline, per expert.
namespace {
// `usages` copies written: 2 for the row-wise data and its transpose, 1 for one of them.
void add_fp8_quantize(std::vector<LayerOp>& ops, const Dims& x, const std::string& name, double elems,
                      std::int64_t splits, double usages) {
  if (!x.fp8) return;
  const int pieces = static_cast<int>(std::max<std::int64_t>(1, splits));
  int kernels = 1;
  double bytes = elems * (x.e + usages);
  switch (x.fp8_recipe) {
    case Fp8Recipe::Delayed: kernels = 1; break;
    case Fp8Recipe::Tensorwise:
      kernels = 4 * pieces;
      bytes += elems * x.e;
      break;
    case Fp8Recipe::Mxfp8:
    case Fp8Recipe::Blockwise: kernels = pieces; break;
  }
  ops.push_back(mem(name, OpKind::Elementwise, bytes, kernels));
}
}  // namespace

void add_fp8_cast_transpose(std::vector<LayerOp>& ops, const Dims& x, const std::string& of, double elems,
                            std::int64_t splits) {
  add_fp8_quantize(ops, x, "fp8_cast_transpose_" + of, elems, splits, 2.0);
}
// FP8 only: the same quantization writing one copy (row-wise, or only the column-wise one).
void add_fp8_cast(std::vector<LayerOp>& ops, const Dims& x, const std::string& of, double elems, std::int64_t splits) {
  add_fp8_quantize(ops, x, "fp8_cast_" + of, elems, splits, 1.0);
}
// FP8 only: the transpose of a saved FP8 tensor for its wgrad GEMM (read 1, write 1).
LayerOp fp8_transpose(const std::string& of, double elems) {
  return mem("fp8_transpose_" + of, OpKind::Elementwise, 2.0 * elems, 1);
}
void add_fp8_transpose(std::vector<LayerOp>& ops, const Dims& x, const std::string& of, double elems) {
  if (x.fp8) ops.push_back(fp8_transpose(of, elems));
}

}  // namespace megasim::model_detail
