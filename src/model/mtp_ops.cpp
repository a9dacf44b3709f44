// Kernel sequence of a multi-token-prediction module's own block, before its transformer layer
// (Megatron-Core multi_token_prediction.py, MultiTokenPredictionLayer._concat_embeddings): the
// shifted tokens' embedding and the previous depth's hidden states each RMS-normalised (enorm,
// hnorm) on the sequence shard, concatenated to width 2h, projected back to h by eh_proj (a
// column-parallel TE linear: its input cast, the sequence all-gather and an FP8 GEMM), the
// projection's output gathered along the hidden dimension (gather_from_tensor_model_parallel_
// region: an all-gather and the chunks' concatenation) and scattered back to the sequence shard
// (a slice of the first dimension: no copy). Same byte conventions as the layer (layer_ops.cpp).
#include <vector>

#include "megasim/model/layer_ops.hpp"
#include "op_builders.hpp"

namespace megasim {

using namespace model_detail;

namespace {

Dims eh_proj_input(const Dims& x) {  // the concatenation the projection reads: [tokens, 2h]
  Dims wide = x;
  wide.h = 2 * x.h;
  return wide;
}

}  // namespace

std::vector<LayerOp> mtp_projection_forward_ops(const JobSpec& job) {
  const Dims x = dims(job);
  const Dims wide = eh_proj_input(x);
  const double shard = resid_elems(x);
  std::vector<LayerOp> ops;
  ops.push_back(norm_fwd(x, "mtp_enorm"));
  ops.push_back(norm_fwd(x, "mtp_hnorm"));
  ops.push_back(mem("mtp_concat", OpKind::Elementwise, 4.0 * shard * x.e, 1));  // reads both, writes 2h
  add_column_input_cast(ops, wide, "mtp_eh_proj_input");
  add_ag(ops, wide, "tp_all_gather_mtp_eh_proj", false, norm_out_bytes(wide));
  ops.push_back(linear(x, "mtp_eh_proj", x.tokens, x.h / x.t, wide.h, false));
  if (x.t > 1) {
    const double full = dd(x.tokens) * dd(x.h);
    ops.push_back(comm("tp_all_gather_mtp_hidden", OpKind::TpAllGather, full * x.e, false));
    ops.push_back(mem("mtp_hidden_concat", OpKind::Elementwise, 2.0 * full * x.e, 1));
  }
  return ops;
}

std::vector<LayerOp> mtp_projection_backward_ops(const JobSpec& job) {
  const Dims x = dims(job);
  const Dims wide = eh_proj_input(x);
  const double shard = resid_elems(x);
  std::vector<LayerOp> ops;
  if (x.t > 1) {
    // The scatter's backward gathers the sequence; the hidden gather's backward keeps this rank's
    // slice of the hidden dimension, made contiguous (_split_along_last_dim).
    if (x.sp) {
      ops.push_back(comm("tp_all_gather_mtp_sequence_grad", OpKind::TpAllGather, dd(x.tokens) * dd(x.h) * x.e,
                         false));
    }
    ops.push_back(mem("mtp_hidden_grad_split", OpKind::Elementwise, 2.0 * dd(x.tokens) * dd(x.h / x.t) * x.e, 1));
  }
  add_column_input_transpose(ops, wide, "mtp_eh_proj_input");
  const std::size_t dgrad = add_linear_bwd(ops, x, "mtp_eh_proj", x.h / x.t, wide.h, false);
  add_col_bwd_comm(ops, x, "mtp_eh_proj", false, {dgrad}, norm_out_bytes(wide), wide.h);
  // The concatenation's backward hands each norm a strided half of the gradient, which the norm's
  // backward makes contiguous first.
  ops.push_back(mem("mtp_concat_grad_split", OpKind::Elementwise, 4.0 * shard * x.e, 2));
  ops.push_back(norm_bwd(x, "mtp_enorm_bwd"));
  ops.push_back(norm_bwd(x, "mtp_hnorm_bwd"));
  return ops;
}

}  // namespace megasim
