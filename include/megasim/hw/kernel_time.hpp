#pragma once
// Kernel-time model: roofline with size-dependent efficiency, pure given a HardwareProfile.
#include <cstdint>

#include <vector>

#include "megasim/config/specs.hpp"
#include "megasim/hw/hardware_profile.hpp"
#include "megasim/model/layer_ops.hpp"

namespace megasim {

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
// One grouped GEMM (MoE experts, one kernel): problem i is rows[i] x n x k, or with
// rows_are_k (a weight gradient) k x n x rows[i]. Each problem pays its own tile padding and k
// ramp; the wave tail is counted over all problems' tiles (gemm.grouped_wave_weight).
double grouped_gemm_time_s(const HardwareProfile& hw, const GpuSpec& gpu, Precision p,
                           const std::vector<std::int64_t>& rows, std::int64_t n, std::int64_t k, bool rows_are_k);
double gemm_time_s(const HardwareProfile& hw, const GpuSpec& gpu, Precision p, std::int64_t m,
                   std::int64_t n, std::int64_t k);
double attention_time_s(const HardwareProfile& hw, const GpuSpec& gpu, Precision p,
                        AttentionKernel kind, bool backward, std::int64_t batch,
                        std::int64_t heads, std::int64_t seq_q, std::int64_t seq_kv_span,
                        std::int64_t head_dim, bool causal, bool dropout = true);
double memory_bound_time_s(const HardwareProfile& hw, const GpuSpec& gpu, double bytes);
// Compute ops only (communication ops return 0: the network model times them). The op carries
// everything its time depends on (shape, FP8 operands, attention kernel, main-grad bytes).
double op_time_s(const HardwareProfile& hw, const GpuSpec& gpu, const LayerOp& op);

// Sum of op times, floored by the host's dispatch rate (a stream cannot run kernels faster than
// an eager framework issues them).
double ops_time_s(const HardwareProfile& hw, const GpuSpec& gpu, const std::vector<LayerOp>& ops);

// Compute slow-down factor (>= 1) while NCCL kernels occupy SMs for overlapped communication.
double overlap_compute_slowdown(const HardwareProfile& hw);

}  // namespace megasim
