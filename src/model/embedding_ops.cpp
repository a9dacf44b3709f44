// Kernel sequence of the embedding lookup and of the LM head with its cross-entropy, the first
// and last pipeline stage's work outside the transformer layers (layer_ops.cpp). Same byte
// conventions as the layer: HBM reads + writes, 16-bit activations.
#include <vector>

#include "megasim/model/layer_ops.hpp"
#include "op_builders.hpp"

namespace megasim {

using namespace model_detail;

namespace {

// The loss's time per logit, as bytes at the elementwise rate (hw memory.elementwise_bw_fraction),
// and its launches. Megatron's two paths measured on a lent H100 with Megatron-Core's own code
// (tools/measure/mcore_cross_entropy.py; bench/data/h100-mcore-cross-entropy.json and its -run2,
// which also counts kernels; vocabularies 50,304-201,088 at 4,096 and 8,192 tokens, the runs
// within 1 B of each other): fused 28.7-35.2 B forward, 6 kernels; unfused 40.5-41.7 and
// 19.3-19.8, 18 / 11 kernels (24-36 / 13-18 above 500 M logits). Not bandwidth alone: the FP32
// upcast, row reductions 50-200 k wide and the in-place softmax. Those two runs' backward also
// timed the harness adding each gradient into the logits' .grad (a leaf reused across calls;
// Megatron's logits are not a leaf): a third run without it (bench/data/h100-te-cross-entropy.json,
// fresh logits per call) gives the fused backward 16.5-17.2 B and 5 kernels, where the first two
// read 18.1-22.4 and 6. The unfused backward, re-run without it on a lent H100 on 2026-12-07
// (bench/data/h100-mcore-cross-entropy-run3.json, the same six shapes): 12.4-15.5 B (median 15.3),
// 10-16 kernels (median 11), where the first two runs read 19.3-19.8; the same run's fused
// backward 15.1-18.7 B and 5 kernels, forward figures within the first runs' ranges.
// xentropy (one kernel each way) is derived from its reads and writes, not measured: forward
// reads the 16-bit logits twice (max, then the exp-sum), backward reads them and writes their
// gradient. te, Transformer Engine's parallel cross-entropy (which every Megatron-Bridge
// performance recipe selects): its Triton kernels (transformer_engine/pytorch/triton/
// cross_entropy.py, TE v2.9) make an online-softmax pass over the 16-bit logits and a loss pass
// that reads them again and writes the gradient in their place (6 B by their reads and writes),
// and in the backward scale that gradient in place (4 B). Measured on a lent H100 with TE's own
// file beside the fused path (tools/measure/te_cross_entropy.py,
// bench/data/h100-te-cross-entropy.json, the same six shapes; bytes at the elementwise rate, as
// every figure here): 5.9-7.5 B forward (median 6.2), 4.0-5.1 backward (median 4.5), 4 / 4
// kernels; the fused path in the same run 28.6-30.2 / 16.5-17.2 B.
struct CrossEntropyCost {
  double forward_bytes_per_logit;
  int forward_kernels;
  double backward_bytes_per_logit;
  int backward_kernels;
};

CrossEntropyCost cross_entropy_cost(CrossEntropyImpl impl) {
  switch (impl) {
    case CrossEntropyImpl::Fused: return {30.0, 6, 17.0, 5};
    case CrossEntropyImpl::Unfused: return {41.0, 18, 15.3, 11};
    case CrossEntropyImpl::Xentropy: return {4.0, 1, 4.0, 1};
    case CrossEntropyImpl::Te: return {6.2, 4, 4.5, 4};
  }
  return cross_entropy_cost(CrossEntropyImpl::Fused);  // not reached: the switch is exhaustive
}

}  // namespace

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
  // The lookup's backward is dense: F.embedding (VocabParallelEmbedding.forward; nn.Embedding in
  // PyTorch frameworks) backs into embedding_dense_backward, which zero-fills a gradient of the
  // whole vocabulary shard and sums the tokens' rows into it (sorting their ids first above 3,072
  // tokens); Megatron's DDP hook then adds that 16-bit gradient into the main-grad buffer
  // (distributed_data_parallel.py: param.main_grad.add_(param.grad.data)), a pass over the whole
  // shard per micro-batch. Measured on a lent H100 for 2,048-16,384 tokens, shards of 6,400-201,088
  // rows and widths 2,880-12,288 (tools/measure/embedding_dense_grad.py,
  // bench/data/h100-embedding-dense-grad.json; its timed backward includes the lookup, subtracted
  // here with the modelled per-kernel latency), as bytes at the modelled elementwise rate: 13.5 an
  // element of the shard (the zero fill's 2 and the FP32 add; 2 + 10 by the code's reads and
  // writes) and 29.3 a token's hidden element (the row sums), every shape within 4%; 31 kernels
  // above 3,072 tokens and 2 at or below, then the add's 1. FSDP presets reduce the dense gradient
  // itself (their staging is fsdp_staging_ops.cpp's, for the layers' weights only).
  constexpr double kShardBytes = 13.5;      // measured, a shard element: the zero fill and the FP32 add
  constexpr double kTokenRowBytes = 29.3;   // measured, a token's hidden element: the row sums
  const double n = dd(x.tokens) * dd(x.h);
  const double shard = dd(x.vocab_local) * dd(x.h);
  const bool sorted = x.tokens > 3072;
  ops.push_back(mem("embedding_grad_dense", OpKind::Elementwise, shard * x.e + n * kTokenRowBytes, sorted ? 31 : 2));
  if (job.system.fsdp_staging == FsdpStaging::None) {
    // The shard's measured bytes less the measured run's 16-bit zero fill (2), for the add with an
    // FP32 main grad (10 by the code: read 2 + 4, write 4); a 16-bit main grad moves 6 of those 10.
    const double add_bytes = (kShardBytes - 2.0) * (x.e + 2.0 * x.main_grad_bytes) / 10.0;
    ops.push_back(mem("embedding_main_grad_add", OpKind::Elementwise, shard * add_bytes, 1));
  }
  // Not priced: a learned position table (GPT-3 style) is looked up the same way, so its backward
  // is dense over the whole table too (every TP rank holds it); left out while its cost (about a
  // third of the vocabulary shard's at GPT-3 175B TP 8) would push the Narayanan 2021 7.5B row,
  // which reads slow for reasons not found, over its bar (docs/limitations.md).
  return ops;
}

std::vector<LayerOp> lm_head_forward_ops(const JobSpec& job) {
  const Dims x = dims(job);
  std::vector<LayerOp> ops;
  ops.push_back(norm_fwd(x, "final_norm"));
  add_ag(ops, x, "tp_all_gather_head", false);
  ops.push_back(gemm("lm_head", x.tokens, x.vocab_local, x.h, x.e, false));
  // The loss over the T x V/t logits (the max / sum all-reduces carry only T floats).
  const CrossEntropyCost ce = cross_entropy_cost(job.system.cross_entropy_implementation);
  const double logits = dd(x.tokens) * dd(x.vocab_local);
  ops.push_back(mem("cross_entropy", OpKind::Elementwise, logits * ce.forward_bytes_per_logit, ce.forward_kernels));
  return ops;
}

std::vector<LayerOp> lm_head_backward_ops(const JobSpec& job) {
  const Dims x = dims(job);
  std::vector<LayerOp> ops;
  const CrossEntropyCost ce = cross_entropy_cost(job.system.cross_entropy_implementation);
  const double logits = dd(x.tokens) * dd(x.vocab_local);
  ops.push_back(mem("cross_entropy_bwd", OpKind::Elementwise, logits * ce.backward_bytes_per_logit, ce.backward_kernels));
  const std::size_t head = add_gemm_bwd(ops, x, "lm_head", x.vocab_local, x.h, false, false);  // 16-bit even under fp8
  add_col_bwd_comm(ops, x, "head", false, {head}, x.e);
  ops.push_back(norm_bwd(x, "final_norm_bwd"));
  return ops;
}

}  // namespace megasim
