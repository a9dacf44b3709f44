#pragma once
// Kernel-time model: roofline with size-dependent efficiency, pure given a HardwareProfile.
#include <cstdint>

#include "megasim/config/specs.hpp"
#include "megasim/hw/hardware_profile.hpp"
#include "megasim/model/layer_ops.hpp"

namespace megasim {

enum class AttentionKernel { Unfused, FlashV1, FlashV2, CudnnFused };
// "unfused" | "flash-v1" | "flash-v2" | "cudnn-fused" (SystemSpec::attention_kernel); InputError
// otherwise.
AttentionKernel parse_attention_kernel(const std::string& name, const std::string& json_path);

double peak_flops(const GpuSpec& gpu, Precision p);

// Fraction of peak the GEMM model grants (e_max · padding · wave · k ramp).
double gemm_efficiency(const GemmParams& g, std::int64_t m, std::int64_t n, std::int64_t k);
// The BF16 block's efficiency (hw.gemm).
double gemm_efficiency(const HardwareProfile& hw, std::int64_t m, std::int64_t n, std::int64_t k);
// The efficiency block of a fused attention kernel (InputError naming the profile's missing
// block for cudnn-fused on a GPU without one).
const AttentionParams& fused_attention_params(const HardwareProfile& hw, AttentionKernel kind, bool backward);
// The GEMM parameters for precision p: hw.gemm_fp8 for fp8 (InputError naming
// hw.<profile>.gemm_fp8 when the profile has none), hw.gemm otherwise.
const GemmParams& gemm_params(const HardwareProfile& hw, Precision p);
double gemm_time_s(const HardwareProfile& hw, const GpuSpec& gpu, Precision p, std::int64_t m,
                   std::int64_t n, std::int64_t k);
double attention_time_s(const HardwareProfile& hw, const GpuSpec& gpu, Precision p,
                        AttentionKernel kind, bool backward, std::int64_t batch,
                        std::int64_t heads, std::int64_t seq_q, std::int64_t seq_kv_span,
                        std::int64_t head_dim, bool causal, bool dropout = true);
double memory_bound_time_s(const HardwareProfile& hw, const GpuSpec& gpu, double bytes);
// Compute ops only (communication ops return 0: the network model times them).
double op_time_s(const HardwareProfile& hw, const GpuSpec& gpu, const JobSpec& job,
                 const LayerOp& op);

// One layer, one micro-batch, one GPU, communication excluded.
struct LayerComputeTimes {
  double forward_s = 0, backward_s = 0, recompute_s = 0;
  double gemm_forward_s = 0, attention_forward_s = 0, memory_forward_s = 0;
  double gemm_backward_s = 0, attention_backward_s = 0, memory_backward_s = 0;
  double overlap_path_gemm_forward_s = 0, overlap_path_gemm_backward_s = 0;  // on the TP-overlap path
};
LayerComputeTimes layer_compute_times(const JobSpec& job, const HardwareProfile& hw);

// Embedding (first stage) and LM head + loss (last stage), one micro-batch.
struct StageExtraTimes {
  double embedding_forward_s = 0, embedding_backward_s = 0;
  double head_forward_s = 0, head_backward_s = 0;
};
StageExtraTimes stage_extra_times(const JobSpec& job, const HardwareProfile& hw);

// Sum of op times, floored by the host's dispatch rate (a stream cannot run kernels faster than
// an eager framework issues them).
double ops_time_s(const HardwareProfile& hw, const GpuSpec& gpu, const JobSpec& job,
                  const std::vector<LayerOp>& ops);

// Optimizer step over this rank's shard (memory-bound multi-tensor kernels). Adam reads fp32
// master, m, v, grad and writes master, m, v and the 16-bit weights (30 B/param); LAMB adds a
// per-tensor norm pass reading weights and update (+8 B/param).
double optimizer_step_time_s(const JobSpec& job, const HardwareProfile& hw, int pipeline_stage = 0);

// Compute slow-down factor (>= 1) while NCCL kernels occupy SMs for overlapped communication.
double overlap_compute_slowdown(const HardwareProfile& hw);

}  // namespace megasim
