// GEMM, attention and memory-bound kernel times (the model form is documented in
// tools/measure/fit_gemm_profile.py, which fits it; configs/hw/*.json hold the parameters).
#include <algorithm>
#include <cmath>

#include "megasim/core/error.hpp"
#include "megasim/hw/kernel_time.hpp"

namespace megasim {
namespace {

// AttentionParams::head_dim_above_128 at head_dim d: 1 up to 128, linear between the points,
// the last point's ratio beyond them.
double head_dim_above_128_ratio(const AttentionParams& a, double d) {
  double d0 = 128, r0 = 1;
  for (const auto& [d1, r1] : a.head_dim_above_128) {
    if (d <= d1) return d <= d0 ? r0 : r0 + (r1 - r0) * (d - d0) / (d1 - d0);
    d0 = d1;
    r0 = r1;
  }
  return r0;
}

double dd(std::int64_t v) { return static_cast<double>(v); }
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
}  // namespace

double peak_flops(const GpuSpec& gpu, Precision p) {
  if (p == Precision::Fp8 && gpu.peak_fp8_flops > 0) return gpu.peak_fp8_flops;
  return gpu.peak_bf16_flops;
}

const GemmParams& gemm_params(const HardwareProfile& hw, Precision p) {
  if (p != Precision::Fp8) return hw.gemm;
  if (!hw.gemm_fp8) throw InputError("hw." + hw.name + ".gemm_fp8", "required for fp8 training (FP8 GEMM efficiency)");
  return *hw.gemm_fp8;
}

const AttentionParams& fused_attention_params(const HardwareProfile& hw, AttentionKernel kind, bool backward) {
  switch (kind) {
    case AttentionKernel::FlashV2: return backward ? hw.flash_v2_bwd : hw.flash_v2_fwd;
    case AttentionKernel::FlashV1: return backward ? hw.flash_v1_bwd : hw.flash_v1_fwd;
    case AttentionKernel::CudnnFused:
      if (!hw.cudnn_fused_fwd || !hw.cudnn_fused_bwd) {
        throw InputError("hw." + hw.name + ".attention.cudnn_fused_forward",
                         "required for system.attention_kernel = cudnn-fused (not measured for this GPU; "
                         "set system.attention_kernel to flash-v2 or unfused)");
      }
      return backward ? *hw.cudnn_fused_bwd : *hw.cudnn_fused_fwd;
    case AttentionKernel::Unfused: break;
  }
  throw InputError("system.attention_kernel", "unfused attention has no fused-kernel efficiency");
}

double gemm_efficiency(const HardwareProfile& hw, std::int64_t m, std::int64_t n, std::int64_t k) {
  return gemm_efficiency(hw.gemm, m, n, k);
}

double gemm_efficiency(const GemmParams& g, std::int64_t m, std::int64_t n, std::int64_t k) {
  if (m <= 0 || n <= 0 || k <= 0) return g.max_efficiency;
  const std::int64_t tm = ceil_div(m, g.tile_m), tn = ceil_div(n, g.tile_n);
  const double u_pad = dd(m) * dd(n) / (dd(tm * g.tile_m) * dd(tn * g.tile_n));
  const double waves = dd(tm * tn) / std::max(1, g.sm_count);
  const double u_wave = 1.0 - g.wave_weight * (1.0 - waves / std::ceil(waves));
  const double r_k = dd(k) / (dd(k) + g.k_half);
  return g.max_efficiency * u_pad * u_wave * r_k;
}

double gemm_time_s(const HardwareProfile& hw, const GpuSpec& gpu, Precision p, std::int64_t m,
                   std::int64_t n, std::int64_t k) {
  if (m <= 0 || n <= 0 || k <= 0) return 0.0;
  const double flops = 2.0 * dd(m) * dd(n) * dd(k);
  const GemmParams& g = gemm_params(hw, p);
  const double compute_s = flops / (peak_flops(gpu, p) * gemm_efficiency(g, m, n, k));
  const double elem = p == Precision::Fp8 ? 1.0 : 2.0;
  const double bytes = elem * (dd(m) * dd(k) + dd(k) * dd(n)) + 2.0 * dd(m) * dd(n);
  const double memory_s = bytes / (gpu.memory_bandwidth_Bps * hw.copy_bw_fraction);
  return g.latency_s + std::max(compute_s, memory_s);
}

double grouped_gemm_time_s(const HardwareProfile& hw, const GpuSpec& gpu, Precision p,
                           const std::vector<std::int64_t>& rows, std::int64_t n, std::int64_t k, bool rows_are_k) {
  const GemmParams& g = gemm_params(hw, p);
  const double elem = p == Precision::Fp8 ? 1.0 : 2.0;
  double compute_s = 0, tiles = 0, bytes = 0;
  for (const std::int64_t r : rows) {
    if (r <= 0) continue;
    // fprop / dgrad: (r x k) @ (k x n); wgrad: the reduction runs over the rows (m = k, k = r).
    const std::int64_t m = rows_are_k ? k : r;
    const std::int64_t kk = rows_are_k ? r : k;
    const std::int64_t tm = ceil_div(m, g.tile_m), tn = ceil_div(n, g.tile_n);
    // Each expert's problem pays its own tile padding and k ramp, as a GEMM of its own would.
    const double u_pad = dd(m) * dd(n) / (dd(tm * g.tile_m) * dd(tn * g.tile_n));
    const double r_k = dd(kk) / (dd(kk) + g.k_half);
    compute_s += 2.0 * dd(m) * dd(n) * dd(kk) / (peak_flops(gpu, p) * g.max_efficiency * u_pad * r_k);
    tiles += dd(tm * tn);
    bytes += elem * (dd(m) * dd(kk) + dd(kk) * dd(n)) + 2.0 * dd(m) * dd(n);
  }
  if (tiles <= 0) return 0.0;
  // One kernel schedules every expert's tiles: the wave tail is counted over all of them.
  const double waves = tiles / std::max(1, g.sm_count);
  compute_s /= 1.0 - g.grouped_wave_weight * (1.0 - waves / std::ceil(waves));
  const double memory_s = bytes / (gpu.memory_bandwidth_Bps * hw.copy_bw_fraction);
  return g.latency_s + std::max(compute_s, memory_s);
}

double memory_bound_time_s(const HardwareProfile& hw, const GpuSpec& gpu, double bytes) {
  if (bytes <= 0) return 0.0;
  return hw.memory_latency_s + bytes / (gpu.memory_bandwidth_Bps * hw.elementwise_bw_fraction);
}

double attention_time_s(const HardwareProfile& hw, const GpuSpec& gpu, Precision p,
                        AttentionKernel kind, bool backward, std::int64_t batch,
                        std::int64_t heads, std::int64_t seq_q, std::int64_t seq_kv_span,
                        std::int64_t head_dim, bool causal, bool dropout) {
  if (batch <= 0 || heads <= 0 || seq_q <= 0 || seq_kv_span <= 0 || head_dim <= 0) return 0.0;
  // Attended (query, key) pairs: causal with a window w over s queries: each query i sees
  // min(i+1, w) keys; with w = s this is s(s+1)/2 ~ s^2/2.
  const double s = dd(seq_q), w = dd(std::min(seq_kv_span, seq_q));
  double pairs = causal ? (w >= s ? s * (s + 1) / 2 : s * w - w * (w - 1) / 2) : s * dd(seq_kv_span);
  if (seq_kv_span > seq_q) pairs = s * dd(seq_kv_span) / (causal ? 2.0 : 1.0);  // CP shard
  const double fwd_flops = 4.0 * dd(batch) * dd(heads) * dd(head_dim) * pairs;
  const double flops = backward ? 2.5 * fwd_flops : fwd_flops;
  const double peak = peak_flops(gpu, p == Precision::Fp8 ? Precision::Bf16 : p);
  if (kind == AttentionKernel::Unfused) {
    // Megatron's core attention as separate kernels over the full (masked, not skipped)
    // s x span score matrix. Each kernel is bound by its passes over that matrix: the score
    // GEMMs write or read it once (their intensity, head_dim FLOPs per byte, is below the ridge
    // point for head_dim <= 128); the fused causal softmax reads each row's unmasked prefix and
    // writes the row; dropout reads and writes it plus a mask. The GEMM FLOPs bound the time
    // from below for large head_dim. Measured: bench/data/h200-unfused-attention.json.
    const double full = 4.0 * dd(batch) * dd(heads) * dd(head_dim) * s * dd(seq_kv_span);
    const double gemm_flops = backward ? 2.0 * full : full;
    const double eff = gemm_efficiency(hw, seq_q, seq_kv_span, head_dim);
    const double score_bytes = 2.0 * dd(batch) * dd(heads) * s * dd(seq_kv_span);
    // With attention_dropout 0 torch skips the dropout kernel and its backward.
    double passes = backward ? hw.unfused_memory_passes_bwd : hw.unfused_memory_passes_fwd;
    if (!dropout) passes -= backward ? hw.unfused_dropout_passes_bwd : hw.unfused_dropout_passes_fwd;
    const double pass_s = passes * score_bytes / (gpu.memory_bandwidth_Bps * hw.unfused_pass_bw_fraction);
    return hw.memory_latency_s + std::max(gemm_flops / (peak * eff), pass_s);
  }
  const AttentionParams& a = fused_attention_params(hw, kind, backward);
  // Efficiency ramps with the attended span per query (longer inner loops amortise the tile
  // prologue), drops for head_dim below 128 (smaller MMAs per loaded tile) and above it follows
  // the profile's measured points (larger tiles, fewer in flight).
  const double span_mean = pairs / s;
  const double eff = a.max_efficiency * (2.0 * span_mean) / (2.0 * span_mean + a.seq_half) *
                     std::pow(std::min(1.0, dd(head_dim) / 128.0), a.head_dim_alpha) *
                     head_dim_above_128_ratio(a, dd(head_dim)) * (dropout ? a.dropout_efficiency : 1.0);
  return hw.gemm.latency_s + flops / (peak * eff);
}

}  // namespace megasim
