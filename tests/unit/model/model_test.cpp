#include <gtest/gtest.h>

#include <optional>

#include "megasim/model/flops.hpp"
#include "megasim/model/layer_ops.hpp"
#include "megasim/model/memory.hpp"
#include "megasim/model/params.hpp"
#include "config/test_util.hpp"
#include "model/test_jobs.hpp"

namespace megasim {
namespace {
using testing::gpt175b_megascale;
using testing::llama;

// The op of that name in `ops` (the first), or null; the reference form throws when absent.
const LayerOp* find_op(const std::vector<LayerOp>& ops, const std::string& name) {
  for (const auto& op : ops)
    if (op.name == name) return &op;
  return nullptr;
}
const LayerOp& op_named(const std::vector<LayerOp>& ops, const std::string& name) {
  const LayerOp* op = find_op(ops, name);
  if (op == nullptr) throw std::runtime_error("no op " + name);
  return *op;
}

TEST(Params, Gpt3_175B) {
  // Per layer 12h^2 + 13h = 1,812,099,072; x96 = 173,961,510,912. Embedding 50257*12288 =
  // 617,558,016; positions 2048*12288 = 25,165,824; final LN 24,576 (head tied).
  // Total 174,604,259,328.
  ModelSpec m = gpt175b_megascale().model;
  m.vocab_size = 50257; m.tie_word_embeddings = true;
  EXPECT_DOUBLE_EQ(parameter_count(m), 174604259328.0);
}

TEST(Params, Llama31) {
  // 8B: layer = 2*4096^2 + 2*1024*4096 + 3*4096*14336 + 2*4096 = 218,112,000; x32 +
  //     2*128256*4096 + 4096 = 8,030,261,248.
  EXPECT_NEAR(parameter_count(llama(4096, 32, 32, 8, 14336)), 8.030261248e9, 1.0);
  // 70B: 855,654,400 x 80 + 2*128256*8192 + 8192 = 70,553,706,496.
  EXPECT_NEAR(parameter_count(llama(8192, 80, 64, 8, 28672)), 70.553706496e9, 1.0);
  // 405B: 3,187,703,808 x 126 + 2*128256*16384 + 16384 = 405,853,388,800.
  EXPECT_NEAR(parameter_count(llama(16384, 126, 128, 8, 53248)) / 405.9e9, 1.0, 0.005);
}

TEST(Params, MptCatalogModelsMatchLlmFoundrysCounts) {
  // llm-foundry's benchmark README (H100 table, NumParams at sequence 2048): 12 l h^2 + V h,
  // plus the 2048-row position table and the bias-free LayerNorms (2 per block and a final one).
  struct Row { const char* name; double published; };
  for (const Row& r : {Row{"mpt-760m", 760470528.0}, Row{"mpt-7b", 6658859008.0}, Row{"mpt-70b", 64862437376.0}}) {
    auto j = test::small_job();
    j["model"] = r.name;
    const ModelSpec m = test::parse(j).model;
    EXPECT_FALSE(m.rope) << r.name;
    EXPECT_FALSE(m.gated_mlp) << r.name;
    EXPECT_TRUE(m.tie_word_embeddings) << r.name;
    EXPECT_NEAR(parameter_count(m) / r.published, 1.0, 5e-4) << r.name;
  }
}

TEST(Flops, MegaScale175BPerToken) {
  // 72*l*h^2*(1 + s/(6h) + V/(12 l h)) = 1.0433e12 * (1 + 0.027778 + 0.0045211) = 1.0774e12.
  EXPECT_NEAR(model_flops_per_token(gpt175b_megascale()) / 1.0774e12, 1.0, 1e-4);
}

TEST(Flops, RecomputeConventions) {
  JobSpec j = gpt175b_megascale();
  const double B = 768, s = 2048, l = 96, h = 12288, V = 64000;
  // Selective: 72 B s l h^2 (1 + s/(3h) + V/(12 l h)) (formulas.md).
  j.training.recompute = Recompute::Selective;
  EXPECT_NEAR(hardware_flops_per_step(j) / (72 * B * s * l * h * h * (1 + s / (3 * h) + V / (12 * l * h))), 1.0, 1e-9);
  // Full: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) (Narayanan Eq. 3).
  j.training.recompute = Recompute::Full;
  EXPECT_NEAR(hardware_flops_per_step(j) / (96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))), 1.0, 1e-9);
  j.training.recompute = Recompute::None;
  EXPECT_DOUBLE_EQ(hardware_flops_per_step(j), model_flops_per_step(j));
}

TEST(Flops, SlidingWindowCountsAttendedSpan) {
  JobSpec j = gpt175b_megascale();
  const double full = model_flops_per_token(j);
  j.model.sliding_window = 1024;
  // Score term 12*l*h*s drops by half: 12*96*12288*1024 = 1.4496e10 fewer FLOPs.
  EXPECT_NEAR(full - model_flops_per_token(j), 12.0 * 96 * 12288 * 1024, 1.0);
}

int count(const std::vector<LayerOp>& ops, OpKind k) {
  int n = 0;
  for (const auto& op : ops) n += op.kind == k ? 1 : 0;
  return n;
}

TEST(LayerOps, ParallelBlockSharesCollectives) {
  JobSpec j = gpt175b_megascale();
  EXPECT_EQ(count(layer_forward_ops(j), OpKind::TpAllGather), 2);
  EXPECT_EQ(count(layer_forward_ops(j), OpKind::TpReduceScatter), 2);
  EXPECT_EQ(count(layer_forward_ops(j), OpKind::Norm), 2);
  j.model.use_parallel_residual = true;
  EXPECT_EQ(count(layer_forward_ops(j), OpKind::TpAllGather), 1);
  EXPECT_EQ(count(layer_forward_ops(j), OpKind::TpReduceScatter), 1);
  EXPECT_EQ(count(layer_forward_ops(j), OpKind::Norm), 1);
  j.parallel.sequence_parallel = false;
  EXPECT_EQ(count(layer_forward_ops(j), OpKind::TpAllReduce), 1);
  EXPECT_EQ(count(layer_forward_ops(j), OpKind::TpAllGather), 0);
}

// TP overlap's scope: MegaScale puts only the FFN linears and their collectives on the
// overlap path; Transformer Engine's userbuffers (all-linears) put every parallel linear of the
// layer there. The attention core, norms and elementwise ops are never on it.
TEST(LayerOps, TpOverlapScopeSelectsTheLinears) {
  for (const bool ptb : {false, true}) {
    JobSpec j = gpt175b_megascale();
    j.model.use_parallel_residual = ptb;
    for (const TpOverlapScope scope : {TpOverlapScope::Ffn, TpOverlapScope::AllLinears}) {
      j.system.tp_overlap_scope = scope;
      const bool all = scope == TpOverlapScope::AllLinears;
      for (const auto& ops : {layer_forward_ops(j), layer_backward_ops(j)}) {
        for (const auto& op : ops) {
          const bool linear = op.kind == OpKind::Gemm || is_communication(op.kind);
          const bool ffn = op.name.find("fc1") != std::string::npos || op.name.find("fc2") != std::string::npos ||
                           op.name.find("mlp") != std::string::npos;
          // With PTB the block's one all-gather and reduce-scatter feed FC1 / leave FC2.
          const bool shared = ptb && is_communication(op.kind);
          EXPECT_EQ(op.tp_overlap_path, linear && (all || ffn || shared)) << to_string(scope) << " " << op.name;
        }
      }
    }
  }
}

TEST(LayerOps, GemmFlopsMatchModelAndBackwardIsTwice) {
  JobSpec j = gpt175b_megascale();
  double fwd = 0, bwd = 0;
  for (const auto& op : layer_forward_ops(j)) if (op.kind == OpKind::Gemm) fwd += op.flops;
  for (const auto& op : layer_backward_ops(j)) if (op.kind == OpKind::Gemm) bwd += op.flops;
  // 24 * tokens * h^2 / t = 24 * 2048 * 12288^2 / 8 = 9.2771e11.
  EXPECT_DOUBLE_EQ(fwd, 24.0 * 2048 * 12288.0 * 12288 / 8);
  EXPECT_DOUBLE_EQ(bwd, 2.0 * fwd);
  // AG payload = b*s*h*2 bytes = 50,331,648.
  for (const auto& op : layer_forward_ops(j)) {
    if (op.kind == OpKind::TpAllGather) {
      EXPECT_DOUBLE_EQ(op.comm_bytes, 2048.0 * 12288 * 2);
    }
  }
}

// FP8 training (Transformer Engine): every linear of a layer is FP8 (fprop, dgrad, wgrad), the
// LM head is not; cast/transpose kernels appear only under fp8; LayerNorm outputs and the
// row-parallel linears' output gradients are all-gathered in FP8; tp_fp8_forward_reduce_scatter
// halves the forward reduce-scatters.
TEST(LayerOps, Fp8MarksTheLinearsAndAddsTheCastKernels) {
  for (const bool ptb : {false, true}) {
    JobSpec j = gpt175b_megascale();
    j.model.use_parallel_residual = ptb;
    j.system.tp_overlap = true;
    auto casts = [](const std::vector<LayerOp>& ops) {
      int n = 0;
      for (const auto& op : ops) n += op.name.rfind("fp8_", 0) == 0 ? 1 : 0;
      return n;
    };
    EXPECT_EQ(casts(layer_forward_ops(j)) + casts(layer_backward_ops(j)), 0);
    std::vector<double> bf16_ag;
    for (const auto& op : layer_forward_ops(j)) if (op.kind == OpKind::TpAllGather) bf16_ag.push_back(op.comm_bytes);
    j.training.precision = Precision::Fp8;
    const auto fwd = layer_forward_ops(j), bwd = layer_backward_ops(j);
    for (const auto& ops : {fwd, bwd}) {
      for (const auto& op : ops) {
        if (op.kind == OpKind::Gemm) {
          EXPECT_TRUE(op.fp8) << op.name;
        }
      }
    }
    // Forward (delayed scaling, the norms writing FP8 themselves): the projection's and FC2's
    // inputs, cast and transposed. Backward: the column-parallel output gradients' cast +
    // transpose (QKV, FC1: Megatron-Core's GeLU runs outside TE); each row-parallel output
    // gradient's shard cast before its all-gather (one shared gather with PTB) and its
    // transpose after (FC2, projection); the transposes of the saved norm output(s).
    EXPECT_EQ(casts(fwd), 2);
    EXPECT_EQ(casts(bwd), 2 + (ptb ? 1 : 2) + 2 + (ptb ? 1 : 2));
    // The gathered output gradients move FP8 (cast before the gather), as Transformer Engine does.
    for (const auto& op : bwd) {
      if (op.kind == OpKind::TpAllGather && op.name.rfind("tp_all_gather_grad", 0) == 0) {
        EXPECT_DOUBLE_EQ(op.comm_bytes, 2048.0 * 12288 * 1) << op.name;
      }
    }
    std::size_t i = 0;
    for (const auto& op : fwd) {
      if (op.kind == OpKind::TpAllGather) {
        EXPECT_DOUBLE_EQ(op.comm_bytes, bf16_ag.at(i++) / 2);
      }
      if (op.kind == OpKind::TpReduceScatter) {
        EXPECT_DOUBLE_EQ(op.comm_bytes, 2048.0 * 12288 * 2);
      }
    }
    j.system.tp_fp8_forward_reduce_scatter = true;
    // Only userbuffer reduce-scatters (on the TP-overlap path: FC2's with scope "ffn") go FP8.
    for (const auto& op : layer_forward_ops(j)) {
      if (op.kind == OpKind::TpReduceScatter) {
        EXPECT_DOUBLE_EQ(op.comm_bytes, 2048.0 * 12288 * (op.tp_overlap_path ? 1 : 2)) << op.name;
      }
    }
    // Gradients stay 16-bit on the wire.
    for (const auto& op : layer_backward_ops(j)) {
      if (op.kind == OpKind::TpReduceScatter) {
        EXPECT_DOUBLE_EQ(op.comm_bytes, 2048.0 * 12288 * 2);
      }
    }
    for (const auto& op : lm_head_forward_ops(j)) EXPECT_FALSE(op.fp8) << op.name;
    for (const auto& op : lm_head_backward_ops(j)) EXPECT_FALSE(op.fp8) << op.name;
  }
}

// Under current scaling (tensorwise) every TP rank quantizes a gathered tensor with one scale:
// each FP8 sequence-parallel gather (the column-parallel inputs forward, the row-parallel output
// gradients backward) is preceded by a 4-byte amax all-reduce over the TP group; delayed scaling
// and TP 1 have none.
TEST(LayerOps, CurrentScalingAllReducesTheAmaxBeforeEachFp8Gather) {
  JobSpec j = gpt175b_megascale();
  j.training.precision = Precision::Fp8;
  auto amax_before_gathers = [](const std::vector<LayerOp>& ops) {
    int amax = 0, fp8_gathers = 0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].name.find("_amax_all_reduce") != std::string::npos) {
        ++amax;
        EXPECT_EQ(ops[i].kind, OpKind::TpAllReduce);
        EXPECT_DOUBLE_EQ(ops[i].comm_bytes, 4.0);
        EXPECT_EQ(ops.at(i + 1).kind, OpKind::TpAllGather);  // right before its gather
      }
      // FP8 gathers of a freshly quantized tensor; the wgrad GEMMs' re-gathers of saved FP8
      // inputs (tp_all_gather_wgrad_*) reuse their scale.
      if (ops[i].kind == OpKind::TpAllGather && ops[i].comm_bytes == 2048.0 * 12288 &&
          ops[i].name.rfind("tp_all_gather_wgrad", 0) != 0) {
        ++fp8_gathers;
      }
    }
    return std::make_pair(amax, fp8_gathers);
  };
  EXPECT_EQ(amax_before_gathers(layer_forward_ops(j)).first, 0);  // delayed scaling (default)
  j.training.fp8_recipe = Fp8Recipe::Tensorwise;
  for (const auto& ops : {layer_forward_ops(j), layer_backward_ops(j)}) {
    const auto [amax, gathers] = amax_before_gathers(ops);
    EXPECT_GT(amax, 0);
    EXPECT_EQ(amax, gathers);
  }
  j.parallel.tensor_model_parallel_size = 1;
  j.parallel.sequence_parallel = false;
  EXPECT_EQ(amax_before_gathers(layer_forward_ops(j)).first, 0);
}

// Rotary embeddings: one fused kernel pair (Q, K) per pass reads and writes the local Q and K
// heads; models with learned positions have none.
TEST(LayerOps, RopeRotatesQueryAndKeyOncePerPass) {
  JobSpec j = gpt175b_megascale();
  const auto rope_ops = [](const std::vector<LayerOp>& ops) {
    std::vector<LayerOp> r;
    for (const auto& op : ops) if (op.name.rfind("rope", 0) == 0) r.push_back(op);
    return r;
  };
  EXPECT_TRUE(rope_ops(layer_forward_ops(j)).empty());
  EXPECT_TRUE(rope_ops(layer_backward_ops(j)).empty());
  j.model = testing::llama(8192, 80, 64, 8, 28672);
  j.parallel.tensor_model_parallel_size = 4;
  // Local Q: 16 heads x 128; local K: 2 heads x 128; 2048 tokens; 2 bytes, read + write.
  const double bytes = 2.0 * 2048 * (16 * 128 + 2 * 128) * 2.0;
  for (const auto& ops : {layer_forward_ops(j), layer_backward_ops(j)}) {
    const auto r = rope_ops(ops);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].kind, OpKind::Elementwise);
    EXPECT_EQ(r[0].kernels, 2);
    EXPECT_DOUBLE_EQ(r[0].bytes, bytes);
  }
  // YaRN runs Megatron-Core's unfused PyTorch sequence: per tensor 12 launches forward and 7
  // backward, 34 / 54 passes of Q and K (measured), each launch at a plain PyTorch op's host time.
  j.model.rope_yarn = true;
  const auto fwd = rope_ops(layer_forward_ops(j));
  const auto bwd = rope_ops(layer_backward_ops(j));
  ASSERT_EQ(fwd.size(), 1u);
  ASSERT_EQ(bwd.size(), 1u);
  EXPECT_EQ(fwd[0].name, "rope_unfused");
  EXPECT_EQ(fwd[0].kernels, 24);
  EXPECT_EQ(bwd[0].kernels, 14);
  EXPECT_DOUBLE_EQ(fwd[0].bytes, 17.0 * bytes);
  EXPECT_DOUBLE_EQ(bwd[0].bytes, 27.0 * bytes);
  EXPECT_TRUE(fwd[0].plain_torch_launches);
  EXPECT_TRUE(bwd[0].plain_torch_launches);
}

// QK norm (Qwen3): per-head RMSNorm of Q and K after the projection. Forward: the query's
// reshape copy and the key's contiguous copy, then two norm kernels, each reading and writing
// the local Q or K; backward: two norm backward passes with their dgamma finalize and two
// main_grad accumulations, reading input and gradient and writing the input gradient.
TEST(LayerOps, QkNormNormalisesTheLocalQueryAndKey) {
  JobSpec j = gpt175b_megascale();
  j.model = testing::llama(8192, 80, 64, 8, 28672);
  j.parallel.tensor_model_parallel_size = 4;
  const auto qk_ops = [](const std::vector<LayerOp>& ops) {
    std::vector<LayerOp> r;
    for (const auto& op : ops) if (op.name.rfind("qk_norm", 0) == 0) r.push_back(op);
    return r;
  };
  EXPECT_TRUE(qk_ops(layer_forward_ops(j)).empty());
  const std::size_t off_fwd = layer_forward_ops(j).size();
  j.model.qk_layernorm = true;
  // Local Q: 16 heads x 128; local K: 2 heads x 128; 2048 tokens; 2 bytes.
  const double elems_bytes = 2048.0 * (16 * 128 + 2 * 128) * 2.0;
  const auto fwd = qk_ops(layer_forward_ops(j));
  ASSERT_EQ(fwd.size(), 2u);
  EXPECT_EQ(fwd[0].kind, OpKind::Elementwise);
  EXPECT_EQ(fwd[1].kind, OpKind::Norm);
  EXPECT_EQ(fwd[0].kernels + fwd[1].kernels, 4);
  EXPECT_DOUBLE_EQ(fwd[0].bytes + fwd[1].bytes, 4.0 * elems_bytes);
  EXPECT_EQ(layer_forward_ops(j).size(), off_fwd + 2);
  const auto bwd = qk_ops(layer_backward_ops(j));
  ASSERT_EQ(bwd.size(), 1u);
  EXPECT_EQ(bwd[0].kernels, 6);
  EXPECT_DOUBLE_EQ(bwd[0].bytes, 3.0 * elems_bytes);
  // It keeps the pre-norm Q and K for its backward.
  JobSpec off = j;
  off.model.qk_layernorm = false;
  EXPECT_NEAR(layer_activation_bytes(j, 0) - layer_activation_bytes(off, 0), elems_bytes, 1e-6 * elems_bytes);
}

// Megatron-Core's copies around the split QKV output (system.qkv_split_copies, from its code):
// the GQA query's reshape copies only with two or more local groups, the value is made
// contiguous for TE's attention once RoPE has made the key contiguous, and the backward
// concatenates the three gradients. Each reads and writes its tensor once.
TEST(LayerOps, QkvSplitCopiesFollowMegatronCore) {
  JobSpec j = gpt175b_megascale();
  j.model = testing::llama(8192, 80, 64, 8, 28672);
  j.model.rope = true;
  j.parallel.tensor_model_parallel_size = 4;  // 16 query heads and 2 groups a rank
  EXPECT_EQ(find_op(layer_forward_ops(j), "query_reshape_copy"), nullptr);  // off outside Megatron-Core
  j.system.qkv_split_copies = true;
  const double tokens = 2048.0;
  const auto fwd = layer_forward_ops(j);
  const LayerOp* q = find_op(fwd, "query_reshape_copy");
  const LayerOp* v = find_op(fwd, "value_contiguous_copy");
  ASSERT_NE(q, nullptr);
  ASSERT_NE(v, nullptr);
  EXPECT_DOUBLE_EQ(q->bytes, 2.0 * tokens * 16 * 128 * 2.0);
  EXPECT_DOUBLE_EQ(v->bytes, 2.0 * tokens * 2 * 128 * 2.0);
  // The value's copy feeds the attention: it sits right before it.
  for (std::size_t i = 0; i + 1 < fwd.size(); ++i) {
    if (fwd[i].name == "value_contiguous_copy") {
      EXPECT_EQ(fwd[i + 1].kind, OpKind::Attention);
    }
  }
  const auto bwd = layer_backward_ops(j);
  const LayerOp* cat = find_op(bwd, "qkv_grad_concat");
  ASSERT_NE(cat, nullptr);
  EXPECT_DOUBLE_EQ(cat->bytes, 2.0 * tokens * (16 + 2 * 2) * 128 * 2.0);
  // One group a rank (TP 8): the reshape is a view. The QK norm's own copy covers the query.
  j.parallel.tensor_model_parallel_size = 8;
  EXPECT_EQ(find_op(layer_forward_ops(j), "query_reshape_copy"), nullptr);
  j.parallel.tensor_model_parallel_size = 4;
  j.model.qk_layernorm = true;
  EXPECT_EQ(find_op(layer_forward_ops(j), "query_reshape_copy"), nullptr);
  EXPECT_NE(find_op(layer_forward_ops(j), "value_contiguous_copy"), nullptr);
  // Without RoPE or a norm the key and value stay views of one buffer: TE takes them as they are.
  j.model.qk_layernorm = false;
  j.model.rope = false;
  EXPECT_EQ(find_op(layer_forward_ops(j), "value_contiguous_copy"), nullptr);
  EXPECT_NE(find_op(layer_backward_ops(j), "qkv_grad_concat"), nullptr);
  // A recomputed attention core makes the value contiguous again.
  j.model.rope = true;
  j.training.recompute = Recompute::Selective;
  j.training.recompute_modules = RecomputeModules{};
  j.training.recompute_modules.core_attn = true;
  EXPECT_NE(find_op(layer_recompute_ops(j), "value_contiguous_copy"), nullptr);
}

// Under FP8, Transformer Engine keeps the FP8 copy (1 byte) of each GEMM input it cast for the
// weight gradient: the QKV and FC1 inputs (the norms' outputs, SP-sharded) and FC2's input
// (the activation output) drop a byte an element, and the attention projection keeps its FP8
// copy of the context beside the attention's own 16-bit output (one more byte).
TEST(MemoryTextbook, Fp8KeepsGemmInputsAtOneByte) {
  JobSpec bf16 = gpt175b_megascale();
  bf16.model.hidden_dropout = 0;
  bf16.model.attention_dropout = 0;
  JobSpec fp8 = bf16;
  fp8.training.precision = Precision::Fp8;
  const double sb = 2048.0, h = 12288.0, f = 4.0 * 12288.0, q = 128.0 * 96.0, t = 8.0;
  const double expected = 2.0 * sb * h / t + sb * f / t - sb * q / t;  // SP: the norm outputs are sharded too
  EXPECT_NEAR(layer_activation_bytes(bf16) - layer_activation_bytes(fp8), expected, 1e-9 * expected);
}

TEST(LayerOps, WeightGradientGemmsAreMarkedAndReduceOverTokens) {
  // TP overlap chunks layer GEMMs along their token rows except the weight gradients; the mark
  // must not depend on a shape coincidence (here h = tokens = 2048).
  JobSpec j = gpt175b_megascale();
  j.model.hidden_size = 2048; j.model.num_attention_heads = 16; j.model.num_key_value_heads = 16;
  j.model.head_dim = 128; j.model.intermediate_size = 4 * 2048;
  int wgrads = 0;
  for (const auto& op : layer_backward_ops(j)) {
    if (op.kind != OpKind::Gemm) continue;
    const bool is_wgrad = op.name.size() > 6 && op.name.substr(op.name.size() - 6) == "_wgrad";
    EXPECT_EQ(op.weight_gradient, is_wgrad) << op.name;
    if (is_wgrad) {
      ++wgrads;
      EXPECT_EQ(op.gemm_k, 2048) << op.name;
    } else {
      EXPECT_EQ(op.gemm_m, 2048) << op.name;
    }
  }
  EXPECT_EQ(wgrads, 4);
  for (const auto& op : layer_forward_ops(j)) EXPECT_FALSE(op.weight_gradient) << op.name;
}

// Megatron's asynchronous backward collectives are exactly the column-parallel ones (with SP:
// the wgrad input all-gather and the dgrad reduce-scatter; without: the dgrad all-reduce), and
// each names backward GEMMs of this layer to run beside; the row-parallel output-gradient
// all-gathers stay synchronous.
TEST(LayerOps, AsyncBackwardCollectivesNameTheirColumnParallelLinears) {
  for (const bool sp : {true, false}) {
    for (const bool ptb : {true, false}) {
      JobSpec j = gpt175b_megascale();
      j.parallel.sequence_parallel = sp;
      j.model.use_parallel_residual = ptb;
      const auto ops = layer_backward_ops(j);
      int async = 0;
      for (std::size_t i = 0; i < ops.size(); ++i) {
        const LayerOp& op = ops[i];
        if (op.beside_gemms.empty()) continue;
        ++async;
        const bool gather = op.kind == OpKind::TpAllGather;
        EXPECT_TRUE(op.kind == (sp ? (op.name.find("all_gather") != std::string::npos ? OpKind::TpAllGather
                                                                                       : OpKind::TpReduceScatter)
                                   : OpKind::TpAllReduce)) << op.name;
        // An all-gather runs beside the linears' dgrad GEMMs, a reduction beside their wgrads;
        // both come earlier in the pass.
        for (const std::size_t g : op.beside_gemms) {
          ASSERT_LT(g, i) << op.name;
          EXPECT_EQ(ops[g].kind, OpKind::Gemm) << op.name;
          EXPECT_EQ(ops[g].weight_gradient, !gather) << op.name << " beside " << ops[g].name;
        }
      }
      // Column-parallel inputs per layer: one (PTB's shared input) or two (attention, MLP).
      EXPECT_EQ(async, (ptb ? 1 : 2) * (sp ? 2 : 1)) << "sp " << sp << " ptb " << ptb;
      for (const auto& op : layer_forward_ops(j)) EXPECT_TRUE(op.beside_gemms.empty()) << op.name;
    }
  }
}

TEST(Memory, KorthikantiActivations) {
  JobSpec j = gpt175b_megascale();
  // Flash + SP: 34*s*b*h/t = 34*2048*12288/8 = 106,954,752 bytes.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(j), 106954752.0);
  // Unfused, no SP, t=8: s*b*h*(10 + 24/8 + 5*a*s/(h*8)) = 25,165,824 * (13 + 13.333) bytes.
  j.system.attention_kernel = AttentionKernel::Unfused;
  j.parallel.sequence_parallel = false;
  EXPECT_NEAR(layer_activation_bytes(j), 25165824.0 * (13.0 + 5.0 * 128 * 2048 / (12288.0 * 8)), 1.0);
  j.training.recompute = Recompute::Full;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(j), 2.0 * 25165824.0);
}

// Without dropout no 1-byte masks are kept: 2*s*b*h/t less per layer with SP (34 -> 32 sbh/t),
// and unfused attention keeps its probabilities once (5 -> 2 bytes per score).
TEST(Memory, NoDropoutKeepsNoMasks) {
  JobSpec j = gpt175b_megascale();
  j.model.hidden_dropout = 0;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(j), 32.0 * 2048 * 12288 / 8);
  j.system.attention_kernel = AttentionKernel::Unfused;
  j.parallel.sequence_parallel = false;
  j.model.attention_dropout = 0;
  // s*b*h*(8 + 24/8 + 2*a*s/(h*8)): masks gone, probabilities saved once.
  EXPECT_NEAR(layer_activation_bytes(j), 25165824.0 * (11.0 + 2.0 * 128 * 2048 / (12288.0 * 8)), 1.0);
}

// With hidden_dropout 0 bias-dropout-add is a residual add (no mask byte) and its backward
// (the identity) launches nothing; the embedding dropout disappears too.
TEST(LayerOps, NoDropoutRemovesTheDropoutKernels) {
  JobSpec j = gpt175b_megascale();
  auto total = [](const std::vector<LayerOp>& ops, const char* prefix) {
    double b = 0;
    int n = 0;
    for (const auto& op : ops)
      if (op.name.rfind(prefix, 0) == 0) { b += op.bytes; ++n; }
    return std::make_pair(b, n);
  };
  j.system.fused_kernels = true;
  const auto with_f = total(layer_forward_ops(j), "bias_dropout_add");
  const auto with_b = total(layer_backward_ops(j), "bias_dropout_add");
  j.model.hidden_dropout = 0;
  const auto none_f = total(layer_forward_ops(j), "bias_dropout_add");
  const auto none_b = total(layer_backward_ops(j), "bias_dropout_add");
  const double n = 2048.0 * 12288 / 8;  // SP shard of the residual
  EXPECT_DOUBLE_EQ(with_f.first - none_f.first, 2.0 * n);  // one mask byte per branch
  EXPECT_EQ(with_b.second, 2);
  EXPECT_EQ(none_b.second, 0);
  EXPECT_EQ(none_b.first, 0.0);
  bool dropout_in_embedding = false;
  for (const auto& op : embedding_forward_ops(j)) dropout_in_embedding |= op.name == "embedding_dropout";
  EXPECT_FALSE(dropout_in_embedding);
  j.model.attention_dropout = 0;
  for (const auto& op : layer_forward_ops(j)) {
    if (op.kind == OpKind::Attention) {
      EXPECT_FALSE(op.attn.dropout);
    }
  }
}

TEST(Memory, InFlightMicroBatches) {
  JobSpec j = gpt175b_megascale();  // 12 layers/stage, p = 8, 192 micro-batches
  EXPECT_DOUBLE_EQ(activation_layer_units_in_flight(j, 0), 12.0 * 8);
  EXPECT_DOUBLE_EQ(activation_layer_units_in_flight(j, 7), 12.0 * 1);
  j.parallel.virtual_pipeline_model_parallel_size = 6;
  // 96 layers * (1 + 7/48) = 110 layers' worth.
  EXPECT_DOUBLE_EQ(activation_layer_units_in_flight(j, 0), 96.0 * (1.0 + 7.0 / 48.0));
}

TEST(Memory, Megatron530BWithUnfusedAttentionNeedsSelectiveRecompute) {
  // MegaScale's 530B (160 heads of 128, h 20480) at TP 8, PP 35, VPP 3, DP 8, ZeRO-2 with
  // Megatron's own attention: the score matrices push stage 0 past an 80 GB GPU; selective
  // recompute, which drops exactly them, fits. Why the weak530b suite's Megatron-LM rows
  // recompute.
  JobSpec j = gpt175b_megascale();
  j.model.hidden_size = 20480; j.model.num_hidden_layers = 105; j.model.num_attention_heads = 160;
  j.model.num_key_value_heads = 160; j.model.head_dim = 128; j.model.intermediate_size = 4 * 20480;
  j.parallel.pipeline_model_parallel_size = 35; j.parallel.virtual_pipeline_model_parallel_size = 3;
  j.parallel.data_parallel_size = 8; j.parallel.zero_stage = 2;
  j.training.global_batch_size = 2240;
  j.system.attention_kernel = AttentionKernel::Unfused;
  const double gpu_bytes = 80.0 * 1024 * 1024 * 1024;
  EXPECT_GT(memory_per_gpu(j, 0, BufferSizes{}).total_bytes(), gpu_bytes);
  j.training.recompute = Recompute::Selective;
  EXPECT_LT(memory_per_gpu(j, 0, BufferSizes{}).total_bytes(), 0.5 * gpu_bytes);
  j.training.recompute = Recompute::None;
  j.system.attention_kernel = AttentionKernel::FlashV2;
  EXPECT_LT(memory_per_gpu(j, 0, BufferSizes{}).total_bytes(), 0.5 * gpu_bytes);
}

// The memory report is the stage that needs the most. Under 1F1B the first stage usually does
// (most micro-batches in flight); with full recompute at PP 2 and a large vocabulary the last
// stage's logits (bf16 + fp32 softmax of s x V/t per micro-batch) outweigh it.
TEST(Memory, PeakIsTheStageThatNeedsTheMost) {
  JobSpec j = gpt175b_megascale();
  const BufferSizes none{};
  const PeakMemory usual = peak_memory_per_gpu(j, none);
  EXPECT_EQ(usual.stage, 0);
  EXPECT_DOUBLE_EQ(usual.breakdown.total_bytes(), memory_per_gpu(j, 0, none).total_bytes());
  j.parallel.pipeline_model_parallel_size = 2;
  j.parallel.virtual_pipeline_model_parallel_size = 1;
  j.training.recompute = Recompute::Full;
  j.model.vocab_size = 1024000;
  const PeakMemory logits = peak_memory_per_gpu(j, none);
  EXPECT_EQ(logits.stage, 1);
  EXPECT_GT(logits.breakdown.total_bytes(), memory_per_gpu(j, 0, none).total_bytes());
}

TEST(Memory, ZeroSharding) {
  JobSpec j = gpt175b_megascale();
  const double params = parameters_per_gpu(j, 3);  // a middle stage: 12 layers only
  EXPECT_NEAR(params, 12 * (12.0 * 12288 * 12288 / 8 + (3 * 12288 + 4 * 12288) / 8.0 + 2 * 12288 + 4 * 12288), 1.0);
  j.parallel.zero_stage = 1;
  MemoryBreakdown m1 = memory_per_gpu(j, 3, BufferSizes{});
  EXPECT_DOUBLE_EQ(m1.weights_bytes, 2 * params);
  EXPECT_DOUBLE_EQ(m1.gradients_bytes, 4 * params);
  EXPECT_DOUBLE_EQ(m1.optimizer_states_bytes, 12 * params / 4);
  j.parallel.zero_stage = 3;
  MemoryBreakdown m3 = memory_per_gpu(j, 3, BufferSizes{});
  EXPECT_DOUBLE_EQ(m3.weights_bytes, 2 * params / 4);
  EXPECT_DOUBLE_EQ(m3.optimizer_states_bytes, 12 * params / 4);
  EXPECT_GT(memory_per_gpu(j, 0, BufferSizes{}).activations_bytes, memory_per_gpu(j, 3, BufferSizes{}).activations_bytes);
}

// Without sequence parallelism nothing is gathered, so TE's LayerNormLinear writes both usages of
// the norm output in the forward and the backward transposes nothing; delayed scaling's norm
// writes FP8 and a transpose kernel follows. Block-scaled recipes always write both. A dense
// MLP recomputed whole (recompute_modules mlp) replays its norm and FP8 casts.
TEST(LayerOps, Fp8NormOutputCastsWithoutSequenceParallelAndInRecompute) {
  JobSpec j = gpt175b_megascale();
  j.training.precision = Precision::Fp8;
  j.parallel.sequence_parallel = false;
  const double tokens_h = 2048.0 * 12288;  // no SP: every rank holds every token
  j.training.fp8_recipe = Fp8Recipe::Tensorwise;
  ASSERT_NE(find_op(layer_forward_ops(j), "fp8_cast_input_norm_output"), nullptr);
  EXPECT_DOUBLE_EQ(find_op(layer_forward_ops(j), "fp8_cast_input_norm_output")->bytes, tokens_h * 4.0);
  j.training.fp8_recipe = Fp8Recipe::Delayed;
  ASSERT_NE(find_op(layer_forward_ops(j), "fp8_transpose_input_norm_output"), nullptr);
  for (const Fp8Recipe r : {Fp8Recipe::Delayed, Fp8Recipe::Tensorwise, Fp8Recipe::Blockwise}) {
    j.training.fp8_recipe = r;
    for (const auto& op : layer_backward_ops(j)) {
      EXPECT_EQ(op.name.find("norm_output"), std::string::npos) << op.name;
    }
  }
  j.parallel.sequence_parallel = true;
  j.training.fp8_recipe = Fp8Recipe::Blockwise;
  EXPECT_DOUBLE_EQ(find_op(layer_forward_ops(j), "fp8_cast_input_norm_output")->bytes, tokens_h / 8 * 4.0);
  j.training.fp8_recipe = Fp8Recipe::Tensorwise;
  j.training.recompute = Recompute::Selective;
  j.training.recompute_modules = RecomputeModules{};
  j.training.recompute_modules.mlp = true;
  const auto rec = layer_recompute_ops(j);
  for (const char* name : {"post_attn_norm", "fp8_cast_post_attn_norm_output", "fc1", "fp8_cast_transpose_fc2_input", "fc2"}) {
    EXPECT_NE(find_op(rec, name), nullptr) << name;
  }
}

// PyTorch FSDP's sharded parameter is the FP32 master weight itself: 4 + 8 B of states a
// parameter on the shard, and no 16-bit copy (Megatron's distributed optimizer keeps one, 2 B).
// Under current scaling (TE v2.9 with Megatron-Core 0d8e0714) the norms write 16 bits and a
// cast follows each (scale + cast, three launches); the projection keeps its 16-bit input, so its
// forward cast writes the row-wise copy only and the backward casts it again with the
// transpose. On a GPU with non-TN FP8 GEMMs (Blackwell) no transpose runs at all and every
// per-tensor cast writes one copy.
TEST(LayerOps, Fp8CurrentScalingCastsAndNonTnGpus) {
  JobSpec j = gpt175b_megascale();
  j.training.precision = Precision::Fp8;
  j.training.fp8_recipe = Fp8Recipe::Tensorwise;
  const std::vector<LayerOp> fwd = layer_forward_ops(j);
  const std::vector<LayerOp> bwd = layer_backward_ops(j);
  const double shard = 2048.0 * 12288 / 8;  // SP shard of the residual stream
  for (const char* norm : {"fp8_cast_input_norm_output", "fp8_cast_post_attn_norm_output"}) {
    EXPECT_DOUBLE_EQ(op_named(fwd, norm).bytes, shard * 3.0) << norm;
    EXPECT_EQ(op_named(fwd, norm).kernels, 3) << norm;
  }
  const double proj = 2048.0 * 12288 / 8;  // the projection's local input
  // ... which keeps no FP8 copy of its own beside the attention's 16-bit output.
  JobSpec delayed = j;
  delayed.training.fp8_recipe = Fp8Recipe::Delayed;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(delayed) - layer_activation_bytes(j), proj * 1.0);
  EXPECT_DOUBLE_EQ(op_named(fwd, "fp8_cast_attn_proj_input").bytes, proj * 5.0);
  EXPECT_DOUBLE_EQ(op_named(bwd, "fp8_cast_transpose_attn_proj_input_columnwise").bytes, proj * 6.0);
  EXPECT_EQ(op_named(bwd, "fp8_cast_transpose_attn_proj_input_columnwise").kernels, 4);
  int transposes = 0;
  for (const auto& op : bwd) transposes += op.name.rfind("fp8_transpose_", 0) == 0 ? 1 : 0;
  EXPECT_EQ(transposes, 4);  // two gathered norm outputs, two gathered output gradients
  j.cluster.gpu.architecture_sm = 100;
  const std::vector<LayerOp> bfwd = layer_forward_ops(j);
  const std::vector<LayerOp> bbwd = layer_backward_ops(j);
  for (const auto& ops : {bfwd, bbwd}) {
    for (const auto& op : ops) {
      EXPECT_EQ(op.name.find("transpose"), std::string::npos) << op.name;
    }
  }
  // FC2's input: one FP8 copy on Blackwell (2 + 2 + 1 bytes), two on Hopper (2 + 2 + 2).
  EXPECT_DOUBLE_EQ(op_named(bfwd, "fp8_cast_fc2_input").bytes * 6.0,
                   op_named(fwd, "fp8_cast_transpose_fc2_input").bytes * 5.0);
  // MXFP8 writes its two quantizations, no transpose: 2 + 1 + 1 bytes an element.
  j.training.fp8_recipe = Fp8Recipe::Mxfp8;
  const std::vector<LayerOp> mx = layer_forward_ops(j);
  EXPECT_DOUBLE_EQ(op_named(mx, "fp8_cast_fc2_input").bytes, op_named(bfwd, "fp8_cast_fc2_input").bytes * 4.0 / 5.0);
  for (const auto& ops : {mx, layer_backward_ops(j)}) {
    for (const auto& op : ops) {
      EXPECT_EQ(op.name.find("transpose"), std::string::npos) << op.name;
    }
  }
}

TEST(Memory, FsdpKeepsNoSixteenBitCopy) {
  JobSpec j = gpt175b_megascale();
  const double params = parameters_per_gpu(j, 3);
  j.parallel.zero_stage = 3;
  const MemoryBreakdown megatron = memory_per_gpu(j, 3, BufferSizes{});
  j.system.fsdp_staging = FsdpStaging::Fsdp1;
  const MemoryBreakdown fsdp = memory_per_gpu(j, 3, BufferSizes{});
  EXPECT_DOUBLE_EQ(fsdp.weights_bytes, 4 * params / 4);
  EXPECT_DOUBLE_EQ(fsdp.optimizer_states_bytes, 8 * params / 4);
  EXPECT_DOUBLE_EQ(fsdp.gradients_bytes, megatron.gradients_bytes);
  EXPECT_DOUBLE_EQ(megatron.weights_bytes + megatron.optimizer_states_bytes -
                       (fsdp.weights_bytes + fsdp.optimizer_states_bytes),
                   2 * params / 4);
  // SHARD_GRAD_OP (ZeRO-2) keeps the unsharded BF16 parameters from forward to backward.
  j.parallel.zero_stage = 2;
  EXPECT_DOUBLE_EQ(memory_per_gpu(j, 3, BufferSizes{}).weights_bytes, 4 * params / 4 + 2 * params);
}

// What the loss keeps per logit follows its implementation: Megatron's upcast FP32 softmax
// beside the 16-bit logits (6 B), TE's gradient written into the logits (2 B), flash-attn's
// xentropy with its separate 16-bit gradient (4 B).
TEST(MemoryTextbook, TheLossKeepsWhatItsImplementationKeeps) {
  JobSpec j = gpt175b_megascale();  // TP 8, PP 8: the last stage holds the head
  j.training.recompute = Recompute::Selective;
  const int last = j.parallel.pipeline_model_parallel_size - 1;
  const double logits = 2048.0 * 1 * static_cast<double>(padded_vocab_size(j.model, 8)) / 8;
  auto act = [&](CrossEntropyImpl impl) {
    j.system.cross_entropy_implementation = impl;
    return memory_per_gpu(j, last, BufferSizes{}).activations_bytes;
  };
  const double fused = act(CrossEntropyImpl::Fused);
  EXPECT_DOUBLE_EQ(act(CrossEntropyImpl::Unfused), fused);
  EXPECT_DOUBLE_EQ(fused - act(CrossEntropyImpl::Te), 4.0 * logits);
  EXPECT_DOUBLE_EQ(fused - act(CrossEntropyImpl::Xentropy), 2.0 * logits);
}

// One layer's working set while it is recomputed: what it keeps without recompute.
double recomputed_working_set(JobSpec j) {
  j.training.recompute = Recompute::Selective;
  return layer_activation_bytes(j);
}

// Under full recompute a layer's working set exists only during its own backward, which runs
// after the loss's backward has freed the logits: the peak holds the larger of the two.
TEST(MemoryTextbook, FullRecomputeHoldsTheLargerOfTheLogitsAndOneLayer) {
  JobSpec j = gpt175b_megascale();
  j.training.recompute = Recompute::Full;
  const int last = j.parallel.pipeline_model_parallel_size - 1;
  const double working = recomputed_working_set(j);
  const double saved = layer_activation_bytes(j) * activation_layer_units_in_flight(j, last) +
                       2.0 * 2048 * 12288 / 8;  // checkpoints + the final norm's input (SP)
  const double logits = 2048.0 * static_cast<double>(padded_vocab_size(j.model, 8)) / 8 * 6.0;
  ASSERT_GT(working, logits);
  EXPECT_DOUBLE_EQ(memory_per_gpu(j, last, BufferSizes{}).activations_bytes, saved + working);
  j.model.vocab_size = 2048000;  // logits now outweigh the layer
  const double big_logits = 2048.0 * static_cast<double>(padded_vocab_size(j.model, 8)) / 8 * 6.0;
  ASSERT_GT(big_logits, working);
  EXPECT_DOUBLE_EQ(memory_per_gpu(j, last, BufferSizes{}).activations_bytes, saved + big_logits);
}

// PyTorch FSDP gathers and reduces whole units (a transformer block each), not Megatron's
// buckets: FULL_SHARD holds two gathered units (the one running, the next in flight) and the
// unsharded root (embedding). A unit's 16-bit gradient builds up beside the recomputed layer's
// working set, and its FP32 copy for the reduce-scatter replaces that working set: the peak is
// the largest of the loss's tensors, working set + gradient, and gradient + copy.
TEST(MemoryTextbook, FsdpBuffersAreWholeUnits) {
  JobSpec j = gpt175b_megascale();
  j.parallel.tensor_model_parallel_size = 1;
  j.parallel.pipeline_model_parallel_size = 1;
  j.parallel.virtual_pipeline_model_parallel_size = 1;
  j.parallel.sequence_parallel = false;
  j.parallel.data_parallel_size = 8;
  j.parallel.zero_stage = 3;
  j.training.recompute = Recompute::Full;
  j.system.grad_reduce_in_fp32 = true;
  j.system.dp_reduce_every_micro_batch = true;
  BufferSizes b;
  b.grad_bucket_elements = 40e6;
  const double megatron = memory_per_gpu(j, 0, b).buffers_bytes;
  EXPECT_DOUBLE_EQ(megatron, 2.0 * 40e6 * 4.0 + 2.0 * 40e6 * 2.0);
  j.system.fsdp_staging = FsdpStaging::Fsdp1;
  const double unit = layer_parameter_count(j.model);
  const double root = embedding_parameter_count(j.model) + head_parameter_count(j.model);
  const double working = recomputed_working_set(j);
  const double head = 2048.0 * static_cast<double>(padded_vocab_size(j.model, 1)) * 6.0;
  const double gathered = 2.0 * unit * 2.0 + root * 2.0;
  // 2,048 tokens: the gradient and its FP32 copy (6 B a weight) outweigh the rest.
  ASSERT_GT(6.0 * unit, std::max(head, working + 2.0 * unit));
  EXPECT_DOUBLE_EQ(memory_per_gpu(j, 0, b).buffers_bytes, gathered + 6.0 * unit - std::max(working, head));
  // A 16-bit reduce dtype makes no copy.
  j.system.grad_reduce_in_fp32 = false;
  EXPECT_DOUBLE_EQ(memory_per_gpu(j, 0, b).buffers_bytes,
                   gathered + std::max({head, working + 2.0 * unit}) - std::max(working, head));
  j.system.grad_reduce_in_fp32 = true;
  // 32,768 tokens: the working set with the gradient building beside it is the peak.
  j.training.seq_length = 32768;
  const double long_working = recomputed_working_set(j);
  const double long_head = 32768.0 * static_cast<double>(padded_vocab_size(j.model, 1)) * 6.0;
  ASSERT_GT(long_working + 2.0 * unit, std::max(long_head, 6.0 * unit));
  EXPECT_DOUBLE_EQ(memory_per_gpu(j, 0, b).buffers_bytes,
                   gathered + long_working + 2.0 * unit - std::max(long_working, long_head));
  // Tensor parallelism divides the unit; SHARD_GRAD_OP keeps the parameters gathered
  // (weights), so only the gradient's share remains.
  j.training.seq_length = 2048;
  j.parallel.tensor_model_parallel_size = 2;
  j.parallel.data_parallel_size = 4;
  j.parallel.zero_stage = 2;
  const double unit_tp = layer_parameters_per_tp_rank(j.model, 2);
  const double working_tp = recomputed_working_set(j);
  const double head_tp = 2048.0 * static_cast<double>(padded_vocab_size(j.model, 2)) / 2 * 6.0;
  const double trans_tp = std::max(working_tp, head_tp);
  EXPECT_DOUBLE_EQ(memory_per_gpu(j, 0, b).buffers_bytes,
                   std::max({head_tp, working_tp + 2.0 * unit_tp, 6.0 * unit_tp}) - trans_tp);
}

// Pipeline send/receive buffers hold what crosses a stage boundary: each rank's 1/t slice with
// sequence parallelism, the whole (all-gathered) tensor without it.
TEST(Memory, PipelineBuffersFollowTheBoundaryTensor) {
  JobSpec j = gpt175b_megascale();  // TP 8, PP 8, SP on
  const double sbh = 2048.0 * 1 * 12288;
  const double with_sp = memory_per_gpu(j, 3, BufferSizes{}).buffers_bytes;
  j.parallel.sequence_parallel = false;
  const double without_sp = memory_per_gpu(j, 3, BufferSizes{}).buffers_bytes;
  EXPECT_DOUBLE_EQ(with_sp, 4.0 * sbh / 8 * 2.0);
  EXPECT_DOUBLE_EQ(without_sp, 4.0 * sbh * 2.0);
}

// Gradients stay whole while they accumulate: megasim reduces them once per step, so ZeRO-2/3
// shard them only when the step is a single micro-batch.
TEST(Memory, GradientsShardOnlyWhenReducedEveryMicroBatch) {
  JobSpec j = gpt175b_megascale();  // DP 4, 192 micro-batches per pipeline
  const double params = parameters_per_gpu(j, 3);
  BufferSizes buf{};
  buf.grad_bucket_elements = 1000;
  for (const int zero : {1, 2, 3}) {
    j.parallel.zero_stage = zero;
    j.training.global_batch_size = 768;
    EXPECT_DOUBLE_EQ(memory_per_gpu(j, 3, buf).gradients_bytes, 4 * params) << "ZeRO-" << zero;
    j.training.global_batch_size = 4;  // one micro-batch per pipeline
    const MemoryBreakdown one = memory_per_gpu(j, 3, buf);
    EXPECT_DOUBLE_EQ(one.gradients_bytes, zero >= 2 ? 4 * params / 4 : 4 * params) << "ZeRO-" << zero;
  }
  // Reduced every micro-batch (ZeRO-2/3 only), they are sharded whatever the step's length.
  j.system.dp_reduce_every_micro_batch = true;
  for (const int zero : {1, 2, 3}) {
    j.parallel.zero_stage = zero;
    EXPECT_DOUBLE_EQ(memory_per_gpu(j, 3, buf).gradients_bytes, zero >= 2 ? 4 * params / 4 : 4 * params)
        << "ZeRO-" << zero;
  }
  j.system.dp_reduce_every_micro_batch = false;
  // The sharded case holds the in-flight unsharded gradient buckets instead.
  j.parallel.zero_stage = 2;
  j.training.global_batch_size = 4;
  const double sharded_buffers = memory_per_gpu(j, 3, buf).buffers_bytes;
  j.training.global_batch_size = 768;
  EXPECT_DOUBLE_EQ(sharded_buffers - memory_per_gpu(j, 3, buf).buffers_bytes, 2.0 * 1000 * 4);
}


}  // namespace
}  // namespace megasim

namespace megasim {
namespace {

TEST(StageLayout, EmbeddingAndLossAccountedAsLayers) {
  // Megatron-Core's account_for_embedding/loss_in_pipeline_split on Llama 3.1 405B, PP 8 x VPP 8:
  // (126 + 2) / 64 = 2 slots per model chunk; the embedding takes one slot of stage 0's first
  // chunk and the loss one of stage 7's last chunk, so those hold 1 layer and every other 2.
  JobSpec j;
  j.model = testing::llama(16384, 126, 128, 8, 53248);
  j.parallel.tensor_model_parallel_size = 8;
  j.parallel.pipeline_model_parallel_size = 8;
  j.parallel.virtual_pipeline_model_parallel_size = 8;
  j.parallel.account_for_embedding_in_pipeline_split = true;
  j.parallel.account_for_loss_in_pipeline_split = true;
  EXPECT_EQ(layers_on_stage(j, 0), 15);
  EXPECT_EQ(layers_on_stage(j, 3), 16);
  EXPECT_EQ(layers_on_stage(j, 7), 15);
  EXPECT_EQ(layers_in_chunk(j, 0, 0), 1);
  EXPECT_EQ(layers_in_chunk(j, 0, 1), 2);
  EXPECT_EQ(layers_in_chunk(j, 7, 6), 2);
  EXPECT_EQ(layers_in_chunk(j, 7, 7), 1);
  std::int64_t total = 0;
  for (int s = 0; s < 8; ++s) {
    std::int64_t stage = 0;
    for (int v = 0; v < 8; ++v) stage += layers_in_chunk(j, s, v);
    EXPECT_EQ(stage, layers_on_stage(j, s)) << "stage " << s;
    total += stage;
  }
  EXPECT_EQ(total, 126);
  // The lighter first and last stages hold fewer parameters than a middle one, so the first
  // stage (embedding) weighs 15 layers + the embedding instead of 16 + the embedding.
  EXPECT_LT(parameters_per_gpu(j, 0), parameters_per_gpu(j, 3) + embedding_parameters_per_gpu(j));
  // Only the loss accounted: (126 + 1) is odd; PP 1 keeps every layer on its one chunk.
  j.parallel.account_for_embedding_in_pipeline_split = false;
  j.parallel.pipeline_model_parallel_size = 1;
  j.parallel.virtual_pipeline_model_parallel_size = 1;
  EXPECT_EQ(layers_on_stage(j, 0), 126);
  EXPECT_EQ(layers_in_chunk(j, 0, 0), 126);
}

TEST(StageLayout, EvenAndUnevenSplitsUnchanged) {
  JobSpec j;
  j.model = testing::llama(4096, 30, 32, 8, 14336);
  j.parallel.pipeline_model_parallel_size = 4;
  j.parallel.virtual_pipeline_model_parallel_size = 2;
  j.parallel.decoder_first_pipeline_num_layers = 6;
  j.parallel.decoder_last_pipeline_num_layers = 8;
  EXPECT_EQ(layers_on_stage(j, 0), 6);
  EXPECT_EQ(layers_on_stage(j, 1), 8);
  EXPECT_EQ(layers_in_chunk(j, 0, 0), 3);
  EXPECT_EQ(layers_in_chunk(j, 1, 1), 4);
  EXPECT_EQ(layers_in_chunk(j, 3, 1), 4);
}


}  // namespace
}  // namespace megasim

namespace megasim {
namespace {

const LayerOp& loss_op(const std::vector<LayerOp>& ops, const std::string& name) {
  for (const auto& op : ops)
    if (op.name == name) return op;
  throw std::runtime_error("no op " + name);
}

// The loss over the logits, per system.cross_entropy_implementation: Megatron-Core's fused and
// Megatron's unfused paths as measured on the lent H100 (bench/data/h100-mcore-cross-entropy.json:
// 30 / 17 and 41 / 15.3 bytes a logit at the elementwise rate), one xentropy kernel each way
// 4 / 4, Transformer Engine's Triton loss as measured, 6.2 / 4.5
// (bench/data/h100-te-cross-entropy.json). The fixture's 175B at TP 8: 2,048 tokens x 64,512 / 8 logits a GPU (64,000 padded
// to a multiple of 128 x TP, as Megatron pads it).
TEST(Model, CrossEntropyImplementationSetsTheLossPasses) {
  JobSpec j = testing::gpt175b_megascale();
  const double logits = 2048.0 * (64512.0 / 8);
  const auto bytes = [&](CrossEntropyImpl impl) {
    j.system.cross_entropy_implementation = impl;
    return std::pair{loss_op(lm_head_forward_ops(j), "cross_entropy").bytes,
                     loss_op(lm_head_backward_ops(j), "cross_entropy_bwd").bytes};
  };
  EXPECT_DOUBLE_EQ(bytes(CrossEntropyImpl::Fused).first, 30.0 * logits);
  EXPECT_DOUBLE_EQ(bytes(CrossEntropyImpl::Fused).second, 17.0 * logits);
  EXPECT_DOUBLE_EQ(bytes(CrossEntropyImpl::Unfused).first, 41.0 * logits);
  EXPECT_DOUBLE_EQ(bytes(CrossEntropyImpl::Unfused).second, 15.3 * logits);
  EXPECT_DOUBLE_EQ(bytes(CrossEntropyImpl::Xentropy).first, 4.0 * logits);
  EXPECT_DOUBLE_EQ(bytes(CrossEntropyImpl::Xentropy).second, 4.0 * logits);
  EXPECT_DOUBLE_EQ(bytes(CrossEntropyImpl::Te).first, 6.2 * logits);
  EXPECT_DOUBLE_EQ(bytes(CrossEntropyImpl::Te).second, 4.5 * logits);
}


// The word embedding's backward is dense (F.embedding's embedding_dense_backward): a zero-filled
// gradient of the whole vocabulary shard with the tokens' rows summed in (sorting their ids above
// 3,072 tokens), then Megatron's DDP hook adds it into the main grad; measured on an H100 as
// 13.5 bytes an element of the shard and 29.3 a token's hidden element. FSDP reduces the dense
// gradient itself: no main-grad add.
TEST(LayerOps, EmbeddingBackwardIsDenseOverTheVocabularyShard) {
  JobSpec j = gpt175b_megascale();  // TP 8, sequence 2048, micro-batch 1
  auto find = [](const std::vector<LayerOp>& ops, const char* name) -> std::optional<LayerOp> {
    for (const auto& o : ops)
      if (o.name == name) return o;
    return std::nullopt;
  };
  const double h = 12288.0;
  const double v_local = static_cast<double>(padded_vocab_size(j.model, 8) / 8);
  const auto ops = embedding_backward_ops(j);
  const auto dense = find(ops, "embedding_grad_dense");
  ASSERT_TRUE(dense.has_value());
  EXPECT_DOUBLE_EQ(dense->bytes, v_local * h * 2.0 + 2048.0 * h * 29.3);
  EXPECT_EQ(dense->kernels, 2);  // 2,048 tokens: the direct kernel
  const auto add = find(ops, "embedding_main_grad_add");
  ASSERT_TRUE(add.has_value());
  EXPECT_DOUBLE_EQ(add->bytes, v_local * h * 11.5);  // FP32 main grad
  EXPECT_EQ(add->kernels, 1);
  j.system.grad_reduce_in_fp32 = false;
  const auto add16 = find(embedding_backward_ops(j), "embedding_main_grad_add");
  ASSERT_TRUE(add16.has_value());
  EXPECT_DOUBLE_EQ(add16->bytes, v_local * h * 11.5 * 0.6);
  j.training.seq_length = 4096;
  const auto sorted = find(embedding_backward_ops(j), "embedding_grad_dense");
  ASSERT_TRUE(sorted.has_value());
  EXPECT_EQ(sorted->kernels, 31);  // sorted above 3,072 tokens
  j.system.fsdp_staging = FsdpStaging::Fsdp2;
  EXPECT_FALSE(find(embedding_backward_ops(j), "embedding_main_grad_add").has_value());
  EXPECT_TRUE(find(embedding_backward_ops(j), "embedding_grad_dense").has_value());
}

}  // namespace
}  // namespace megasim
