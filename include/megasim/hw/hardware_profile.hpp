#pragma once
#include <utility>
#include <vector>
// Hardware-efficiency profile of one GPU generation (configs/hw/<name>.json, read by
// megasim/catalogs/hardware_profile_reader.hpp). The kernel-time model's form is the same for
// every GPU; only these fitted or cited parameters differ.
#include <optional>
#include <string>

#include "megasim/model/memory.hpp"

namespace megasim {

struct GemmParams {
  double max_efficiency = 0;   // e_max: large, aligned GEMM fraction of dense peak
  double k_half = 0;           // r_k = k / (k + k_half): per-tile prologue/epilogue cost
  int tile_m = 128, tile_n = 256;
  int sm_count = 0;            // SMs for wave quantization
  double wave_weight = 0;      // 0 = stream-K hides the wave tail, 1 = classic wave quantization
  // The same for a grouped GEMM (MoE experts): its waves are counted over every expert's tiles.
  // The FP8 block uses the BF16 block's figure.
  double grouped_wave_weight = 1;
  double latency_s = 0;        // fixed per-kernel time (pipeline fill, DRAM round trip)
  // A weight-gradient GEMM that accumulates into the main-grad buffer (reads C and writes D in
  // the gradient dtype instead of writing a 16-bit result) takes this fraction of the time its
  // extra bytes need at full HBM bandwidth on top of its compute time: the part of the epilogue
  // traffic the main loop does not hide. 0 = not charged (a profile where it was not measured).
  double main_grad_exposed_fraction = 0;
  // FP8 block: time of a block-scaled GEMM (Transformer Engine's blockwise recipe) relative to
  // the per-tensor-scaled one, for the forward / dgrad (1x128 x 128x128 scales) and the wgrad
  // (1x128 x 1x128). 0 = not measured for this GPU (a blockwise run is then an input error).
  double blockwise_fprop_dgrad_time_ratio = 0;
  double blockwise_wgrad_time_ratio = 0;
};

// A fused (flash-style) attention kernel:
//   efficiency(s) = max_eff * s / (s + s_half) * (d/128)^alpha, times dropout_efficiency when
//   attention dropout is on (the kernel then draws random numbers per score and keeps a mask).
struct AttentionParams {
  double max_efficiency = 0;
  double seq_half = 0;
  double head_dim_alpha = 0;
  double dropout_efficiency = 1;
  // Measured rate relative to head_dim 128 for head dims above it, as (head_dim, ratio) points
  // in ascending head_dim (an MLA kernel counts as the mean of its query/key and value dims);
  // linear between 128 (ratio 1) and the points, the last ratio beyond them. Empty: ratio 1.
  std::vector<std::pair<double, double>> head_dim_above_128;
};

struct HardwareProfile {
  std::string name;
  GemmParams gemm;                     // BF16/FP16 GEMMs
  // FP8 GEMMs (E4M3 operands, per-tensor scales, 16-bit output: what Transformer Engine runs
  // for every linear in fp8 training), as a fraction of the FP8 peak. Absent on GPUs without
  // FP8 tensor cores; sm_count and latency_s are the BF16 block's.
  std::optional<GemmParams> gemm_fp8;
  AttentionParams flash_v2_fwd, flash_v2_bwd, flash_v1_fwd, flash_v1_bwd;
  // cuDNN's fused flash attention (Transformer Engine's FusedAttention, sub-backend
  // F16_arbitrary_seqlen). Absent where it was not measured.
  std::optional<AttentionParams> cudnn_fused_fwd, cudnn_fused_bwd;
  // Unfused attention: passes over the b·a·s·span score matrix, at this fraction of HBM bandwidth.
  double unfused_memory_passes_fwd = 0;
  double unfused_memory_passes_bwd = 0;
  double unfused_dropout_passes_fwd = 0;  // the dropout kernel's share of the passes above
  double unfused_dropout_passes_bwd = 0;
  double unfused_pass_bw_fraction = 0;
  // Memory-bound kernels: t = latency + bytes / (bw * fraction).
  double memory_latency_s = 0;
  double elementwise_bw_fraction = 0;
  double norm_bw_fraction = 0;
  double copy_bw_fraction = 0;
  double upcast_bw_fraction = 0;  // PyTorch's BF16 -> FP32 cast kernel (LayerOp::upcast_bytes)
  double kernel_launch_overhead_s = 0;  // device-side gap between back-to-back kernels
  double host_dispatch_s = 0;           // plain eager PyTorch (autograd on) host time per kernel
                                        // launch, before a framework's factor (system.host_launch_factor_*)
  double host_collective_call_s = 0;    // host time of one torch.distributed NCCL collective call
  double host_all_to_all_call_s = 0;    //   ... of Megatron-Core's all-to-all-v (split lists)
  double host_all_reduce_call_s = 0;    //   ... of an in-place all-reduce (no output allocation)
  int nccl_channels_sharing_sms = 0;    // SMs taken by NCCL kernels while overlapping
  BufferSizes buffers;
};

}  // namespace megasim
