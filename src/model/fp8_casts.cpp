// Transformer Engine's FP8 casts of a layer's tensors, by recipe (training.fp8_recipe) and by the
// GPU's FP8 GEMM layouts; which tensors a layer casts is layer_ops.cpp's.
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
// On a GPU whose FP8 GEMMs take non-TN layouts (Blackwell) a per-tensor-scaled cast writes one
// copy for both usages (quantizer.cpp: with_transpose = columnwise && !non_tn); block-scaled
// recipes still write a row-wise and a column-wise quantization, without a transpose.
namespace {
bool one_copy_serves_both(const Dims& x) {
  return x.fp8_non_tn && (x.fp8_recipe == Fp8Recipe::Delayed || x.fp8_recipe == Fp8Recipe::Tensorwise);
}
// `usages` copies written: 2 for the row-wise data and its transpose, 1 for one of them.
void add_fp8_quantize(std::vector<LayerOp>& ops, const Dims& x, const std::string& name, double elems,
                      std::int64_t splits, double usages) {
  if (!x.fp8) return;
  const int pieces = static_cast<int>(std::max<std::int64_t>(1, splits));
  int kernels = 1;
  double bytes = elems * (x.e + (one_copy_serves_both(x) ? 1.0 : usages));
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
  // On a non-TN GPU no cast transposes (a block-scaled one writes its two quantizations).
  add_fp8_quantize(ops, x, (x.fp8_non_tn ? "fp8_cast_" : "fp8_cast_transpose_") + of, elems, splits, 2.0);
}
// FP8 only: the same quantization writing one copy (row-wise, or only the column-wise one).
void add_fp8_cast(std::vector<LayerOp>& ops, const Dims& x, const std::string& of, double elems, std::int64_t splits) {
  add_fp8_quantize(ops, x, "fp8_cast_" + of, elems, splits, 1.0);
}
// FP8 only: the transpose of a saved FP8 tensor for its wgrad GEMM (read 1, write 1). A
// block-scaled recipe's column-wise copy is written by its cast, so it has none either way on a
// non-TN GPU; on Hopper TE transposes the gathered copy (distributed.py gather_along_first_dim).
LayerOp fp8_transpose(const std::string& of, double elems) {
  return mem("fp8_transpose_" + of, OpKind::Elementwise, 2.0 * elems, 1);
}
void add_fp8_transpose(std::vector<LayerOp>& ops, const Dims& x, const std::string& of, double elems) {
  if (x.fp8 && !x.fp8_non_tn) ops.push_back(fp8_transpose(of, elems));
}

// A plain column-parallel TE linear (no norm fused in) quantizes its 16-bit input itself: under
// SP the shard row-wise before the all-gather (linear.py forward) and the gathered copy
// transposed again for the wgrad in the backward; without SP row- and column-wise at once.
void add_column_input_cast(std::vector<LayerOp>& ops, const Dims& x, const std::string& of) {
  if (x.sp) {
    add_fp8_cast(ops, x, of, resid_elems(x));
  } else {
    add_fp8_cast_transpose(ops, x, of, dd(x.tokens) * dd(x.h));
  }
}
void add_column_input_transpose(std::vector<LayerOp>& ops, const Dims& x, const std::string& of) {
  if (x.sp) add_fp8_transpose(ops, x, of, dd(x.tokens) * dd(x.h));
}

namespace {
bool block_scaled_recipe(const Dims& x) {
  return x.fp8_recipe == Fp8Recipe::Blockwise || x.fp8_recipe == Fp8Recipe::Mxfp8;
}
}  // namespace

// A LayerNormLinear's norm output (TE v2.9 module/layernorm_linear.py, csrc normalization.cpp).
// With SP the forward writes what the all-gather moves, the row-wise copy (Float8 recipes cannot
// gather the column-wise one), and the backward gathers it again and transposes it
// (fp8_norm_output_transposed_in_backward); without SP the forward writes both usages. Delayed
// scaling: the norm kernel writes FP8 itself, plus a transpose kernel without SP
// (rmsnorm_api.cpp). Current scaling: the norm writes 16 bits and its amax, then the scale and
// the cast run (quantizer.cpp quantize_with_amax: read 2, write a byte a copy, three launches
// with the amax reset). Block-scaled recipes quantize the 16-bit output in one kernel writing
// both usages.
void add_fp8_norm_output_cast(std::vector<LayerOp>& ops, const Dims& x, const std::string& of, double elems) {
  if (!x.fp8) return;
  const double copies = x.sp || x.fp8_non_tn ? 1.0 : 2.0;
  switch (x.fp8_recipe) {
    case Fp8Recipe::Delayed:
      if (!x.sp) add_fp8_transpose(ops, x, of, elems);
      return;
    case Fp8Recipe::Tensorwise:
      ops.push_back(mem("fp8_cast_" + of, OpKind::Elementwise, elems * (x.e + copies), 3));
      return;
    case Fp8Recipe::Mxfp8:
    case Fp8Recipe::Blockwise:
      ops.push_back(mem("fp8_cast_" + of, OpKind::Elementwise, elems * (x.e + 2.0), 1));
      return;
  }
}
bool fp8_norm_output_transposed_in_backward(const Dims& x) { return x.fp8 && x.sp && !x.fp8_non_tn; }

// A row-parallel linear's output-gradient shard quantized before its SP all-gather (TE base.py
// grad_output_preprocess): Float8 recipes quantize it row-wise only, since their all-gather
// cannot carry the column-wise copy, and transpose the gathered tensor for the wgrad;
// block-scaled recipes quantize both usages and gather both (quantized_tensor.py
// supports_only_rowwise_all_gather).
void add_fp8_gather_cast(std::vector<LayerOp>& ops, const Dims& x, const std::string& of, double elems) {
  add_fp8_quantize(ops, x, "fp8_cast_" + of, elems, 1, block_scaled_recipe(x) ? 2.0 : 1.0);
}
double fp8_gather_bytes(const Dims& x) { return block_scaled_recipe(x) ? 2.0 : 1.0; }

// Megatron-Core's attention sets save_original_input on linear_proj for every recipe but delayed
// (transformer/attention.py, multi_latent_attention.py: TE >= 2.6). The forward then quantizes
// the input row-wise only (linear.py: columnwise = backward_needs_input and not
// save_original_input); the backward quantizes the kept 16-bit input again for the wgrad,
// column-wise only where the recipe allows it and row- and column-wise for Float8 current
// scaling (linear.py backward: supports_only_rowwise_all_gather).
void add_proj_input_cast_fwd(std::vector<LayerOp>& ops, const Dims& x, double elems) {
  if (x.fp8_recipe == Fp8Recipe::Delayed) {
    add_fp8_cast_transpose(ops, x, "attn_proj_input", elems);
  } else {
    add_fp8_cast(ops, x, "attn_proj_input", elems);
  }
}
void add_proj_input_cast_bwd(std::vector<LayerOp>& ops, const Dims& x, double elems) {
  if (x.fp8_recipe == Fp8Recipe::Delayed) return;
  if (x.fp8_recipe == Fp8Recipe::Tensorwise) {
    add_fp8_cast_transpose(ops, x, "attn_proj_input_columnwise", elems);
  } else {
    add_fp8_cast(ops, x, "attn_proj_input_columnwise", elems);
  }
}

}  // namespace megasim::model_detail
