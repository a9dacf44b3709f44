#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "megasim/catalogs/hardware_profile_reader.hpp"
#include "megasim/core/error.hpp"
#include "megasim/hw/kernel_time.hpp"
#include "megasim/model/params.hpp"
#include "model/test_jobs.hpp"

namespace megasim {
namespace {

HardwareProfile load(const std::string& name) {
  std::ifstream f(std::string(MEGASIM_SOURCE_DIR) + "/configs/hw/" + name + ".json");
  return load_hardware_profile(nlohmann::json::parse(f), "hw." + name);
}

TEST(Profile, AllLoad) {
  EXPECT_EQ(load("hopper").gemm.sm_count, 132);
  EXPECT_EQ(load("ampere").gemm.sm_count, 108);
  EXPECT_EQ(load("blackwell").gemm.sm_count, 148);
}

TEST(Profile, MissingSourceIsInputError) {
  std::ifstream f(std::string(MEGASIM_SOURCE_DIR) + "/configs/hw/hopper.json");
  auto j = nlohmann::json::parse(f);
  j["gemm"]["k_half"].erase("source");
  try {
    load_hardware_profile(j, "hw.hopper");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "hw.hopper.gemm.k_half");
  }
}

// A key the reader does not understand is an error naming its path, never a figure left at its
// default: a misspelt optional main-grad fraction would otherwise charge nothing.
TEST(Profile, UnknownKeysAreErrorsNamingThePath) {
  std::ifstream f(std::string(MEGASIM_SOURCE_DIR) + "/configs/hw/ampere.json");
  const auto base = nlohmann::json::parse(f);
  const auto expect_unknown = [](const nlohmann::json& j, const std::string& path, const std::string& rule) {
    try {
      load_hardware_profile(j, "hw.ampere");
      ADD_FAILURE() << "accepted " << path;
    } catch (const InputError& e) {
      EXPECT_EQ(e.path(), path);
      EXPECT_NE(e.rule().find(rule), std::string::npos) << e.what();
    }
  };
  auto j = base;
  j["gemm"]["main_grad_exposd_fraction"] = {{"value", 0.7}, {"source", "typo"}};
  expect_unknown(j, "hw.ampere.gemm.main_grad_exposd_fraction", "did you mean \"main_grad_exposed_fraction\"?");
  j = base;
  j["gemm"]["k_half"]["sorce"] = "typo";
  expect_unknown(j, "hw.ampere.gemm.k_half.sorce", "did you mean \"source\"?");
  j = base;
  j["attention"]["flash_v2_forward"]["seq_halve"] = {{"value", 1}, {"source", "typo"}};
  expect_unknown(j, "hw.ampere.attention.flash_v2_forward.seq_halve", "did you mean \"seq_half\"?");
  j = base;
  j["bufers"] = nlohmann::json::object();
  expect_unknown(j, "hw.ampere.bufers", "did you mean \"buffers\"?");
}

TEST(Profile, MainGradFractionOutOfRangeNamesItsBlock) {
  std::ifstream f(std::string(MEGASIM_SOURCE_DIR) + "/configs/hw/hopper.json");
  auto j = nlohmann::json::parse(f);
  j["gemm_fp8"]["main_grad_exposed_fraction"]["value"] = 10.0;
  try {
    load_hardware_profile(j, "hw.hopper");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "hw.hopper.gemm_fp8.main_grad_exposed_fraction.value");
  }
}

const GpuSpec kH200 = testing::gpt175b_megascale().cluster.gpu;

TEST(Gemm, LargeGemmHitsMaxEfficiency) {
  const HardwareProfile hw = load("hopper");
  // 16384^3: no padding; 128x64 = 8192 tiles / 132 SMs = 62.06 waves -> 1 - 0.1*(1 - 62.06/63)
  // = 0.99851; r_k = 16384/(16384+224) = 0.98651. Product 0.98504 of e_max.
  const double e = gemm_efficiency(hw, 16384, 16384, 16384);
  const double waves = 8192.0 / 132;
  const double expect = (1 - 0.1 * (1 - waves / 63)) * 16384.0 / (16384 + hw.gemm.k_half);
  EXPECT_NEAR(e / hw.gemm.max_efficiency, expect, 1e-9);
  const double t = gemm_time_s(hw, kH200, Precision::Bf16, 16384, 16384, 16384);
  EXPECT_NEAR(t, hw.gemm.latency_s + 2.0 * 16384.0 * 16384 * 16384 / (989.4e12 * e), 1e-9);
}

TEST(Gemm, NeverAbovePeakAndMonotone) {
  const HardwareProfile hw = load("hopper");
  double prev = 0;
  for (std::int64_t m = 64; m <= 32768; m *= 2) {
    const double t = gemm_time_s(hw, kH200, Precision::Bf16, m, 12288, 4608);
    EXPECT_GT(t, prev);
    EXPECT_LE(2.0 * static_cast<double>(m) * 12288 * 4608 / t, 989.4e12 * hw.gemm.max_efficiency);
    prev = t;
  }
}

TEST(Gemm, TileQuantizationAtAwkwardSizes) {
  const HardwareProfile hw = load("hopper");
  // n = 8200 pads to 33 tiles of 256 (8448): 3% padding waste per FLOP.
  const double a = gemm_time_s(hw, kH200, Precision::Bf16, 2048, 8192, 8192) / 8192;
  const double b = gemm_time_s(hw, kH200, Precision::Bf16, 2048, 8200, 8192) / 8200;
  EXPECT_GT(b, a * 1.02);
}

TEST(Gemm, MatchesH200MeasurementWithin15Percent) {
  // bench/data/h200-kernels.json: 2048 x 4608 x 12288 (175B QKV, TP8) ran in 310.4 us.
  const HardwareProfile hw = load("hopper");
  EXPECT_NEAR(gemm_time_s(hw, kH200, Precision::Bf16, 2048, 4608, 12288) / 310.4e-6, 1.0, 0.15);
}

// FP8 GEMMs use the profile's gemm_fp8 block against the FP8 peak (bench/data/h200-fp8-gemm.json);
// a profile without one (Ampere: no FP8 tensor cores) is an input error naming the block.
TEST(Gemm, Fp8UsesItsOwnBlockAndPeak) {
  const HardwareProfile hw = load("hopper");
  ASSERT_TRUE(hw.gemm_fp8.has_value());
  GpuSpec gpu = kH200;
  gpu.peak_fp8_flops = 1978.9e12;
  const double e8 = gemm_efficiency(*hw.gemm_fp8, 8192, 8192, 8192);
  EXPECT_NEAR(gemm_time_s(hw, gpu, Precision::Fp8, 8192, 8192, 8192),
              hw.gemm_fp8->latency_s + 2.0 * 8192.0 * 8192 * 8192 / (1978.9e12 * e8), 1e-9);
  // Measured: 2048 x 4608 x 12288 (175B QKV, TP8) 1289 TFLOP/s in FP8, 681 in BF16.
  EXPECT_NEAR(gemm_time_s(hw, gpu, Precision::Fp8, 2048, 4608, 12288) / (2.0 * 2048 * 4608 * 12288 / 1289e12),
              1.0, 0.15);
  const double speedup = gemm_time_s(hw, gpu, Precision::Bf16, 2048, 4608, 12288) /
                         gemm_time_s(hw, gpu, Precision::Fp8, 2048, 4608, 12288);
  EXPECT_GT(speedup, 1.5);
  EXPECT_LT(speedup, 2.0);  // twice the peak, never twice the speed
  const HardwareProfile ampere = load("ampere");
  EXPECT_FALSE(ampere.gemm_fp8.has_value());
  try {
    gemm_params(ampere, Precision::Fp8);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "hw.ampere.gemm_fp8");
  }
}

// Gradient-accumulation fusion: a weight-gradient GEMM pays, on top of its 16-bit-output time,
// the measured exposed fraction (per precision) of its extra epilogue bytes at HBM bandwidth:
// 6 per output element with FP32 main grads (read 4 + write 4 instead of write 2), 2 with BF16.
TEST(Gemm, MainGradEpilogueIsChargedPerPrecision) {
  const HardwareProfile hw = load("hopper");
  GpuSpec gpu = kH200;
  gpu.peak_fp8_flops = 1978.9e12;
  LayerOp op;
  op.kind = OpKind::Gemm;
  op.gemm_m = 13312; op.gemm_n = 16384; op.gemm_k = 4096;
  const double mn = 13312.0 * 16384;
  for (const bool fp8 : {false, true}) {
    op.fp8 = fp8;
    const double exposed = fp8 ? hw.gemm_fp8->main_grad_exposed_fraction : hw.gemm.main_grad_exposed_fraction;
    EXPECT_GT(exposed, 0.5) << fp8;
    EXPECT_LT(exposed, 1.0) << fp8;
    op.weight_gradient = false;
    const double plain = op_time_s(hw, gpu, op);
    op.weight_gradient = true;
    op.main_grad_bytes = 4.0;  // FP32 main grads: read and write 4 bytes instead of writing 2
    EXPECT_NEAR(op_time_s(hw, gpu, op) - plain, exposed * 6.0 * mn / gpu.memory_bandwidth_Bps, 1e-9);
    op.main_grad_bytes = 2.0;
    EXPECT_NEAR(op_time_s(hw, gpu, op) - plain, exposed * 2.0 * mn / gpu.memory_bandwidth_Bps, 1e-9);
  }
  // FP8 hides less of the epilogue than BF16 (a shorter main loop), as measured.
  EXPECT_GT(hw.gemm_fp8->main_grad_exposed_fraction, hw.gemm.main_grad_exposed_fraction);
  // Not measured on Ampere: not charged.
  const HardwareProfile ampere = load("ampere");
  op.fp8 = false;
  op.weight_gradient = true;
  const double with = op_time_s(ampere, gpu, op);
  op.weight_gradient = false;
  EXPECT_DOUBLE_EQ(with, op_time_s(ampere, gpu, op));
  // The op builders fill main_grad_bytes from the job: FP32 reduction (Megatron's default for
  // bf16) gives 4 bytes on every wgrad GEMM, 16-bit reduction 2, other ops 0.
  JobSpec job = testing::gpt175b_megascale();
  for (const bool fp32 : {true, false}) {
    job.system.grad_reduce_in_fp32 = fp32;
    for (const auto& o : layer_backward_ops(job)) {
      EXPECT_EQ(o.main_grad_bytes, o.weight_gradient ? (fp32 ? 4.0 : 2.0) : 0.0) << o.name;
    }
  }
}

// Transformer Engine's blockwise recipe on Hopper: cuBLASLt applies the 1x128 / 128x128 scales in
// the main loop; measured 1.18x the per-tensor GEMM's time for fprop / dgrad and 1.60x for the
// wgrad (1x128 on both operands). Blackwell runs them as MXFP8 GEMMs (TE #2157); a profile without
// the ratios cannot price a blockwise run.
TEST(Gemm, BlockScaledFp8GemmsTakeTheMeasuredRatio) {
  const HardwareProfile hw = load("hopper");
  GpuSpec gpu = kH200;
  gpu.peak_fp8_flops = 1978.9e12;
  LayerOp op;
  op.kind = OpKind::Gemm;
  op.fp8 = true;
  op.gemm_m = 8192; op.gemm_n = 14336; op.gemm_k = 4096;
  // The ratio scales the GEMM itself, not its launch gap or main-grad epilogue.
  const double gemm = gemm_time_s(hw, gpu, Precision::Fp8, 8192, 14336, 4096);
  const double tensorwise = op_time_s(hw, gpu, op);
  op.fp8_block_scaled = true;
  EXPECT_NEAR(op_time_s(hw, gpu, op) - tensorwise, 0.18 * gemm, 1e-12);
  op.weight_gradient = true;
  op.main_grad_bytes = 4.0;
  op.fp8_block_scaled = false;
  const double wgrad = op_time_s(hw, gpu, op);
  op.fp8_block_scaled = true;
  EXPECT_NEAR(op_time_s(hw, gpu, op) - wgrad, 0.60 * gemm, 1e-12);
  op.fp8 = false;  // a 16-bit GEMM ignores the flag
  op.fp8_block_scaled = true;
  const double bf16 = op_time_s(hw, gpu, op);
  op.fp8_block_scaled = false;
  EXPECT_DOUBLE_EQ(op_time_s(hw, gpu, op), bf16);
  op.fp8 = true;
  op.fp8_block_scaled = true;
  HardwareProfile unmeasured = hw;
  unmeasured.gemm_fp8->blockwise_wgrad_time_ratio = 0;
  EXPECT_THROW(op_time_s(unmeasured, gpu, op), InputError);
  const HardwareProfile blackwell = load("blackwell");
  EXPECT_DOUBLE_EQ(blackwell.gemm_fp8->blockwise_fprop_dgrad_time_ratio, 1.0);
  // The op builders mark a job's FP8 linears under the blockwise recipe only.
  JobSpec job = testing::gpt175b_megascale();
  job.training.precision = Precision::Fp8;
  for (const Fp8Recipe r : {Fp8Recipe::Tensorwise, Fp8Recipe::Blockwise}) {
    job.training.fp8_recipe = r;
    int fp8_gemms = 0;
    std::vector<LayerOp> ops = layer_forward_ops(job);
    const std::vector<LayerOp> bwd = layer_backward_ops(job);
    ops.insert(ops.end(), bwd.begin(), bwd.end());
    for (const auto& o : ops) {
      if (o.kind != OpKind::Gemm) continue;
      fp8_gemms += o.fp8 ? 1 : 0;
      EXPECT_EQ(o.fp8_block_scaled, o.fp8 && r == Fp8Recipe::Blockwise) << o.name;
    }
    EXPECT_GE(fp8_gemms, 12);  // qkv, proj, fc1, fc2: fprop, dgrad, wgrad
  }
}

TEST(Attention, KernelsOrdered) {
  const HardwareProfile hw = load("hopper");
  auto t = [&](AttentionKernel k) {
    return attention_time_s(hw, kH200, Precision::Bf16, k, false, 8, 16, 2048, 2048, 128, true, false);
  };
  EXPECT_LT(t(AttentionKernel::CudnnFused), t(AttentionKernel::FlashV2));
  EXPECT_LT(t(AttentionKernel::FlashV2), t(AttentionKernel::FlashV1));
  EXPECT_LT(t(AttentionKernel::FlashV1), t(AttentionKernel::Unfused));
  // Measured without dropout, b8 h16 s2048 d128 (bench/data/h200-kernels.json and
  // h200-cudnn-attention.json): flash forward 285 TFLOP/s causal-counted, cuDNN 527.
  const double fwd_flops = 4.0 * 8 * 16 * 128 * 2048.0 * 2049 / 2;
  EXPECT_NEAR(t(AttentionKernel::FlashV2) / (fwd_flops / 285e12), 1.0, 0.1);
  EXPECT_NEAR(t(AttentionKernel::CudnnFused) / (fwd_flops / 527e12), 1.0, 0.1);
}

// Attention dropout slows the fused kernels by their measured factor (cuDNN's forward halves:
// it draws the random numbers and writes no mask, but the draws cost as much as the math).
// cuDNN's fused attention above head_dim 128 follows the profile's measured points
// (bench/data/h100-mla-attention.json): MLA's 192/128 heads (mean 160) backward at 0.886 of the
// 128-head rate, 192/192 at 0.696, forward 0.983 and 1.052; linear between, held beyond. The
// FLOPs scale with head_dim, so time per FLOP is what the ratio moves.
TEST(Attention, CudnnHeadDimsAbove128FollowTheMeasuredPoints) {
  const HardwareProfile hw = load("hopper");
  auto per_dim = [&](bool backward, std::int64_t d) {
    return attention_time_s(hw, kH200, Precision::Bf16, AttentionKernel::CudnnFused, backward, 1, 64, 4096, 4096, d,
                            true, false) -
           hw.gemm.latency_s;
  };
  auto ratio = [&](bool backward, std::int64_t d) {  // rate at d over the rate at 128
    return (per_dim(backward, 128) / 128.0) / (per_dim(backward, d) / static_cast<double>(d));
  };
  EXPECT_NEAR(ratio(true, 160), 0.886, 1e-9);
  EXPECT_NEAR(ratio(true, 192), 0.696, 1e-9);
  EXPECT_NEAR(ratio(true, 176), 0.886 + (0.696 - 0.886) * 0.5, 1e-9);
  EXPECT_NEAR(ratio(true, 256), 0.696, 1e-9);
  EXPECT_NEAR(ratio(false, 160), 0.983, 1e-9);
  EXPECT_NEAR(ratio(true, 144), 1.0 + (0.886 - 1.0) * 0.5, 1e-9);
  // A profile without the points: ratio 1 (Blackwell's cuDNN block has none measured).
  ASSERT_TRUE(load("blackwell").cudnn_fused_bwd.has_value());
  EXPECT_TRUE(load("blackwell").cudnn_fused_bwd->head_dim_above_128.empty());
}

TEST(Profile, HeadDimPointsMustRiseAndBeSourced) {
  std::ifstream f(std::string(MEGASIM_SOURCE_DIR) + "/configs/hw/hopper.json");
  const auto base = nlohmann::json::parse(f);
  auto bad = base;
  bad["attention"]["cudnn_fused_backward"]["head_dim_above_128"]["value"] = {{192, 0.7}, {160, 0.9}};
  EXPECT_THROW(load_hardware_profile(bad, "hw.hopper"), InputError);
  bad = base;
  bad["attention"]["cudnn_fused_backward"]["head_dim_above_128"].erase("source");
  EXPECT_THROW(load_hardware_profile(bad, "hw.hopper"), InputError);
  bad = base;
  bad["attention"]["cudnn_fused_backward"]["head_dim_above_128"]["value"] = {{160, 0.0}};
  EXPECT_THROW(load_hardware_profile(bad, "hw.hopper"), InputError);
}

TEST(Attention, DropoutCostsTheMeasuredFactor) {
  const HardwareProfile hw = load("hopper");
  auto t = [&](AttentionKernel k, bool bwd, bool dropout) {
    return attention_time_s(hw, kH200, Precision::Bf16, k, bwd, 2, 16, 8192, 8192, 128, true, dropout) -
           hw.gemm.latency_s;
  };
  EXPECT_NEAR(t(AttentionKernel::CudnnFused, false, false) / t(AttentionKernel::CudnnFused, false, true),
              hw.cudnn_fused_fwd->dropout_efficiency, 1e-9);
  EXPECT_NEAR(t(AttentionKernel::FlashV2, true, false) / t(AttentionKernel::FlashV2, true, true),
              hw.flash_v2_bwd.dropout_efficiency, 1e-9);
  // Measured with dropout 0.1, b2 h16 s8192 d128: cuDNN forward 286 TFLOP/s, flash backward 252.
  const double fwd_flops = 4.0 * 2 * 16 * 128 * 8192.0 * 8193 / 2;
  EXPECT_NEAR(t(AttentionKernel::CudnnFused, false, true) / (fwd_flops / 286e12), 1.0, 0.1);
  EXPECT_NEAR(t(AttentionKernel::FlashV2, true, true) / (2.5 * fwd_flops / 252e12), 1.0, 0.1);
}

// cuDNN fused attention is measured on Hopper only: asking for it on another profile names the
// missing block instead of guessing.
TEST(Attention, CudnnFusedNeedsItsBlock) {
  const HardwareProfile hw = load("ampere");
  EXPECT_FALSE(hw.cudnn_fused_fwd.has_value());
  try {
    attention_time_s(hw, kH200, Precision::Bf16, AttentionKernel::CudnnFused, false, 1, 16, 2048, 2048, 128, true);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "hw.ampere.attention.cudnn_fused_forward");
  }
}

TEST(Attention, UnfusedMatchesH200Measurement) {
  // bench/data/h200-unfused-attention.json, 32 heads x 2048 tokens, head_dim 128, dropout 0.1,
  // Megatron-style causal softmax: forward 558 us, backward 674 us.
  const HardwareProfile hw = load("hopper");
  auto t = [&](bool bwd, std::int64_t span) {
    return attention_time_s(hw, kH200, Precision::Bf16, AttentionKernel::Unfused, bwd, 1, 32, 2048,
                            span, 128, true);
  };
  EXPECT_NEAR(t(false, 2048) / 558e-6, 1.0, 0.15);
  EXPECT_NEAR(t(true, 2048) / 674e-6, 1.0, 0.15);
  // The score matrix, not the causal pair count, sets the unfused cost: a 1024-token window
  // halves it.
  EXPECT_NEAR(t(false, 1024) / t(false, 2048), 0.5, 0.02);
  // Without attention dropout its passes go: 6.0 -> 3.5 forward, 8.5 -> 6.0 backward (there the
  // score GEMMs' FLOPs, the lower bound, take over).
  auto nodrop = [&](bool bwd) {
    return attention_time_s(hw, kH200, Precision::Bf16, AttentionKernel::Unfused, bwd, 1, 32, 2048,
                            2048, 128, true, false);
  };
  EXPECT_NEAR((nodrop(false) - hw.memory_latency_s) / (t(false, 2048) - hw.memory_latency_s), 3.5 / 6.0, 1e-9);
  EXPECT_LT(nodrop(true), t(true, 2048));
  EXPECT_GE((nodrop(true) - hw.memory_latency_s) / (t(true, 2048) - hw.memory_latency_s), 6.0 / 8.5 - 1e-9);
}

TEST(Memory, BandwidthBound) {
  const HardwareProfile hw = load("hopper");
  // 400 MB at 0.81 * 4.8 TB/s = 102.9 us + 3.5 us latency.
  EXPECT_NEAR(memory_bound_time_s(hw, kH200, 400e6), 3.5e-6 + 400e6 / (0.81 * 4.8e12), 1e-9);
}

TEST(Layer, ComputeTimesSane) {
  const HardwareProfile hw = load("hopper");
  JobSpec j = testing::gpt175b_megascale();
  const GpuSpec& gpu = j.cluster.gpu;
  const auto time_of = [&](const std::vector<LayerOp>& ops, OpKind kind, bool overlap_path_only = false) {
    double s = 0;
    for (const auto& op : ops) {
      if (op.kind == kind && (!overlap_path_only || op.tp_overlap_path)) s += op_time_s(hw, gpu, op);
    }
    return s;
  };
  const double fwd = ops_time_s(hw, gpu, layer_forward_ops(j));
  const double bwd = ops_time_s(hw, gpu, layer_backward_ops(j));
  EXPECT_GT(fwd, 0);
  EXPECT_GT(bwd / fwd, 1.5);
  EXPECT_LT(bwd / fwd, 3.0);
  EXPECT_EQ(ops_time_s(hw, gpu, layer_recompute_ops(j)), 0.0);
  const double gemm_fwd = time_of(layer_forward_ops(j), OpKind::Gemm);
  j.system.tp_overlap = true;
  EXPECT_GT(time_of(layer_forward_ops(j), OpKind::Gemm, true), 0.5 * gemm_fwd);  // FC1+FC2 are 2/3 of GEMMs
  // Forward GEMM FLOPs 9.277e11 at <= 0.715 of peak: at least 1.31 ms.
  EXPECT_GT(gemm_fwd, 9.277e11 / (0.715 * 989.4e12));
  const double elementwise = time_of(layer_forward_ops(j), OpKind::Elementwise);
  j.system.fused_kernels = true;
  EXPECT_LT(time_of(layer_forward_ops(j), OpKind::Elementwise), elementwise);
  j.training.recompute = Recompute::Full;
  EXPECT_NEAR(ops_time_s(hw, gpu, layer_recompute_ops(j)), ops_time_s(hw, gpu, layer_forward_ops(j)), 1e-12);
  // The attention op carries the job's kernel: unfused attention is slower than FlashAttention-2.
  const double flash = time_of(layer_forward_ops(j), OpKind::Attention);
  j.system.attention_kernel = AttentionKernel::Unfused;
  EXPECT_GT(time_of(layer_forward_ops(j), OpKind::Attention), flash);
}

TEST(Overlap, SlowdownFromSharedSms) {
  const HardwareProfile hw = load("hopper");  // 132 / (132 - 16)
  EXPECT_NEAR(overlap_compute_slowdown(hw), 132.0 / 116.0, 1e-12);
}

}  // namespace
}  // namespace megasim
