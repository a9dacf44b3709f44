// Kernel sequence of the embedding lookup and of the LM head with its cross-entropy, the first
// and last pipeline stage's work outside the transformer layers (layer_ops.cpp). Same byte
// conventions as the layer: HBM reads + writes, 16-bit activations.
#include <vector>

#include "megasim/model/layer_ops.hpp"
#include "op_builders.hpp"

namespace megasim {

using namespace model_detail;

std::vector<LayerOp> embedding_forward_ops(const JobSpec& job) {
  const Dims x = dims(job);
  std::vector<LayerOp> ops;
  const double n = dd(x.tokens) * dd(x.h);
  const bool pos = job.model.max_position_embeddings > 0 && !job.model.rope;
  // Vocab-parallel lookup: each rank gathers the rows it owns (zeros elsewhere), then reduces.
  ops.push_back(mem("embedding_lookup", OpKind::Elementwise, (pos ? 3.0 : 2.0) * n * x.e, pos ? 2 : 1));
  add_rs_or_ar(ops, x, "tp_reduce_embedding", false);
  if (x.hidden_dropout) {
    ops.push_back(mem("embedding_dropout", OpKind::Elementwise,
                      2.0 * resid_elems(x) * x.e + resid_elems(x), 1));
  }
  return ops;
}

std::vector<LayerOp> embedding_backward_ops(const JobSpec& job) {
  const Dims x = dims(job);
  std::vector<LayerOp> ops;
  add_ag(ops, x, "tp_all_gather_embedding_grad", false);
  // Scatter-add of dY rows into the fp32 main-grad of the table.
  const double n = dd(x.tokens) * dd(x.h);
  ops.push_back(mem("embedding_grad_scatter_add", OpKind::Elementwise, n * x.e + 2.0 * n * 4.0, 1));
  return ops;
}

std::vector<LayerOp> lm_head_forward_ops(const JobSpec& job) {
  const Dims x = dims(job);
  std::vector<LayerOp> ops;
  ops.push_back(norm_fwd(x, "final_norm"));
  add_ag(ops, x, "tp_all_gather_head", false);
  ops.push_back(gemm("lm_head", x.tokens, x.vocab_local, x.h, x.e, false));
  // Vocab-parallel cross-entropy: fp32 cast, max, exp-sum, loss over T x V/t logits (3 passes
  // over 4-byte logits + the bf16 read); the max/sum all-reduces carry only T floats.
  const double logits = dd(x.tokens) * dd(x.vocab_local);
  ops.push_back(mem("cross_entropy", OpKind::Elementwise, logits * (x.e + 3.0 * 4.0), 3));
  return ops;
}

std::vector<LayerOp> lm_head_backward_ops(const JobSpec& job) {
  const Dims x = dims(job);
  std::vector<LayerOp> ops;
  const double logits = dd(x.tokens) * dd(x.vocab_local);
  ops.push_back(mem("cross_entropy_bwd", OpKind::Elementwise, logits * (4.0 + x.e), 1));
  const std::size_t head = add_gemm_bwd(ops, x, "lm_head", x.vocab_local, x.h, false, false);  // 16-bit even under fp8
  add_col_bwd_comm(ops, x, "head", false, {head}, x.e);
  ops.push_back(norm_bwd(x, "final_norm_bwd"));
  return ops;
}

}  // namespace megasim
