// JSON -> HardwareProfile. Every numeric field is an object {"value": x, "source": "..."}; the
// source is required so that no figure enters the model without provenance.
#include "megasim/catalogs/hardware_profile_reader.hpp"

#include <nlohmann/json.hpp>

#include "catalogs/sourced_figure.hpp"
#include "megasim/config/catalog.hpp"
#include "megasim/config/strict_keys.hpp"
#include "megasim/core/error.hpp"

namespace megasim {
namespace {

using catalogs_detail::sourced_figure;

const nlohmann::json& obj(const nlohmann::json& j, const std::string& path, const char* key) {
  if (!j.contains(key) || !j.at(key).is_object())
    throw InputError(join_path(path, key), "required object is missing");
  return j.at(key);
}

// Optional {"value": [[head_dim, ratio], ...], "source": "..."}: head dims above 128 in
// ascending order, ratios in (0, 2].
std::vector<std::pair<double, double>> head_dim_points(const nlohmann::json& o, const std::string& p) {
  std::vector<std::pair<double, double>> out;
  if (!o.contains("head_dim_above_128")) return out;
  const std::string path = join_path(p, "head_dim_above_128");
  const auto& f = o.at("head_dim_above_128");
  if (!f.is_object() || !f.contains("value") || !f.at("value").is_array() || !f.contains("source") ||
      !f.at("source").is_string() || f.at("source").get<std::string>().empty() || f.size() != 2) {
    throw InputError(path, "must be {\"value\": [[head_dim, ratio], ...], \"source\": \"...\"}");
  }
  double last = 128;
  for (const auto& pt : f.at("value")) {
    if (!pt.is_array() || pt.size() != 2 || !pt[0].is_number() || !pt[1].is_number()) {
      throw InputError(path, "each point must be [head_dim, ratio]");
    }
    const double d = pt[0].get<double>(), r = pt[1].get<double>();
    if (!(d > last) || !(r > 0 && r <= 2)) {
      throw InputError(path, "head dims must rise above 128 and ratios lie in (0, 2]");
    }
    out.emplace_back(d, r);
    last = d;
  }
  return out;
}

AttentionParams attn(const nlohmann::json& j, const std::string& path, const char* key) {
  const auto& o = obj(j, path, key);
  const std::string p = join_path(path, key);
  require_known_keys(o, p, {"max_efficiency", "seq_half", "head_dim_alpha", "dropout_efficiency", "head_dim_above_128"});
  return AttentionParams{sourced_figure(o, p, "max_efficiency", 0.01, 1.0), sourced_figure(o, p, "seq_half", 0, 1e6),
                         sourced_figure(o, p, "head_dim_alpha", 0, 4),
                         sourced_figure(o, p, "dropout_efficiency", 0.01, 1.0), head_dim_points(o, p)};
}

// The fitted fields of a GEMM block (gemm, gemm_fp8): peak fraction, k ramp, tiles, wave tail.
void read_gemm_shape(const nlohmann::json& o, const std::string& p, GemmParams& g) {
  g.max_efficiency = sourced_figure(o, p, "max_efficiency", 0.05, 1.0);
  g.k_half = sourced_figure(o, p, "k_half", 0, 1e5);
  g.tile_m = static_cast<int>(sourced_figure(o, p, "tile_m", 16, 1024));
  g.tile_n = static_cast<int>(sourced_figure(o, p, "tile_n", 16, 1024));
  g.wave_weight = sourced_figure(o, p, "wave_weight", 0, 1);
}

}  // namespace

HardwareProfile load_hardware_profile(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) throw InputError(path, "hardware profile must be a JSON object");
  // Every block is checked for keys this reader does not understand (a misspelt optional figure
  // would otherwise be read as absent).
  require_known_keys(j, path, {"name", "description", "gemm", "gemm_fp8", "attention", "memory", "launch",
                               "overlap", "buffers"});
  HardwareProfile hw;
  hw.name = j.contains("name") && j.at("name").is_string() ? j.at("name").get<std::string>() : path;
  const auto& g = obj(j, path, "gemm");
  const std::string gp = join_path(path, "gemm");
  require_known_keys(g, gp, {"max_efficiency", "k_half", "tile_m", "tile_n", "wave_weight", "grouped_wave_weight",
                             "sm_count", "latency_s", "main_grad_exposed_fraction"});
  read_gemm_shape(g, gp, hw.gemm);
  hw.gemm.grouped_wave_weight = sourced_figure(g, gp, "grouped_wave_weight", 0, 1);
  hw.gemm.sm_count = static_cast<int>(sourced_figure(g, gp, "sm_count", 1, 10000));
  hw.gemm.latency_s = sourced_figure(g, gp, "latency_s", 0, 1e-3);
  // Measured on Hopper only; a block without it does not charge the main-grad epilogue.
  const auto main_grad = [](const nlohmann::json& o, const std::string& p) {
    return o.contains("main_grad_exposed_fraction") ? sourced_figure(o, p, "main_grad_exposed_fraction", 0.01, 4) : 0.0;
  };
  hw.gemm.main_grad_exposed_fraction = main_grad(g, gp);
  if (j.contains("gemm_fp8")) {
    GemmParams g8 = hw.gemm;  // the GPU's SM count and kernel latency
    const auto& f = obj(j, path, "gemm_fp8");
    require_known_keys(f, join_path(path, "gemm_fp8"),
                       {"max_efficiency", "k_half", "tile_m", "tile_n", "wave_weight", "main_grad_exposed_fraction",
                        "blockwise_fprop_dgrad_time_ratio", "blockwise_wgrad_time_ratio"});
    read_gemm_shape(f, join_path(path, "gemm_fp8"), g8);
    g8.main_grad_exposed_fraction = main_grad(f, join_path(path, "gemm_fp8"));
    const auto ratio = [&](const char* key) {
      return f.contains(key) ? sourced_figure(f, join_path(path, "gemm_fp8"), key, 0.25, 4) : 0.0;
    };
    g8.blockwise_fprop_dgrad_time_ratio = ratio("blockwise_fprop_dgrad_time_ratio");
    g8.blockwise_wgrad_time_ratio = ratio("blockwise_wgrad_time_ratio");
    hw.gemm_fp8 = g8;
  }
  const auto& a = obj(j, path, "attention");
  const std::string ap = join_path(path, "attention");
  require_known_keys(a, ap, {"flash_v2_forward", "flash_v2_backward", "flash_v1_forward", "flash_v1_backward",
                             "cudnn_fused_forward", "cudnn_fused_backward", "unfused_memory_passes_forward",
                             "unfused_memory_passes_backward", "unfused_dropout_passes_forward",
                             "unfused_dropout_passes_backward", "unfused_pass_bw_fraction"});
  hw.flash_v2_fwd = attn(a, ap, "flash_v2_forward");
  hw.flash_v2_bwd = attn(a, ap, "flash_v2_backward");
  hw.flash_v1_fwd = attn(a, ap, "flash_v1_forward");
  hw.flash_v1_bwd = attn(a, ap, "flash_v1_backward");
  if (a.contains("cudnn_fused_forward") || a.contains("cudnn_fused_backward")) {
    hw.cudnn_fused_fwd = attn(a, ap, "cudnn_fused_forward");
    hw.cudnn_fused_bwd = attn(a, ap, "cudnn_fused_backward");
  }
  hw.unfused_memory_passes_fwd = sourced_figure(a, ap, "unfused_memory_passes_forward", 0, 64);
  hw.unfused_memory_passes_bwd = sourced_figure(a, ap, "unfused_memory_passes_backward", 0, 64);
  hw.unfused_dropout_passes_fwd =
      sourced_figure(a, ap, "unfused_dropout_passes_forward", 0, hw.unfused_memory_passes_fwd);
  hw.unfused_dropout_passes_bwd =
      sourced_figure(a, ap, "unfused_dropout_passes_backward", 0, hw.unfused_memory_passes_bwd);
  hw.unfused_pass_bw_fraction = sourced_figure(a, ap, "unfused_pass_bw_fraction", 0.01, 1);
  const auto& m = obj(j, path, "memory");
  const std::string mp = join_path(path, "memory");
  require_known_keys(m, mp, {"latency_s", "elementwise_bw_fraction", "norm_bw_fraction", "copy_bw_fraction",
                              "upcast_bw_fraction"});
  hw.memory_latency_s = sourced_figure(m, mp, "latency_s", 0, 1e-3);
  hw.elementwise_bw_fraction = sourced_figure(m, mp, "elementwise_bw_fraction", 0.01, 1);
  hw.norm_bw_fraction = sourced_figure(m, mp, "norm_bw_fraction", 0.01, 1);
  hw.copy_bw_fraction = sourced_figure(m, mp, "copy_bw_fraction", 0.01, 1);
  hw.upcast_bw_fraction = sourced_figure(m, mp, "upcast_bw_fraction", 0.01, 1);
  const auto& l = obj(j, path, "launch");
  const std::string lp = join_path(path, "launch");
  require_known_keys(l, lp, {"kernel_launch_overhead_s", "host_dispatch_s", "host_collective_call_s",
                              "host_all_to_all_call_s", "host_all_reduce_call_s"});
  require_known_keys(obj(j, path, "overlap"), join_path(path, "overlap"), {"nccl_channels"});
  hw.kernel_launch_overhead_s = sourced_figure(l, lp, "kernel_launch_overhead_s", 0, 1e-3);
  hw.host_dispatch_s = sourced_figure(l, lp, "host_dispatch_s", 0, 1e-3);
  hw.host_collective_call_s = sourced_figure(l, lp, "host_collective_call_s", 0, 1e-3);
  hw.host_all_to_all_call_s = sourced_figure(l, lp, "host_all_to_all_call_s", 0, 1e-3);
  hw.host_all_reduce_call_s = sourced_figure(l, lp, "host_all_reduce_call_s", 0, 1e-3);
  hw.nccl_channels_sharing_sms =
      static_cast<int>(sourced_figure(obj(j, path, "overlap"), join_path(path, "overlap"), "nccl_channels", 0, 256));
  const auto& b = obj(j, path, "buffers");
  const std::string bp = join_path(path, "buffers");
  require_known_keys(b, bp, {"nccl_bytes_per_communicator", "cublas_workspace_bytes", "cuda_context_bytes",
                             "grad_bucket_elements"});
  hw.buffers.nccl_bytes_per_communicator = sourced_figure(b, bp, "nccl_bytes_per_communicator", 0, 1e11);
  hw.buffers.cublas_workspace_bytes = sourced_figure(b, bp, "cublas_workspace_bytes", 0, 1e11);
  hw.buffers.cuda_context_bytes = sourced_figure(b, bp, "cuda_context_bytes", 0, 1e11);
  hw.buffers.grad_bucket_elements = sourced_figure(b, bp, "grad_bucket_elements", 0, 1e12);
  if (hw.nccl_channels_sharing_sms >= hw.gemm.sm_count)
    throw InputError(join_path(path, "overlap.nccl_channels"), "must be fewer than gemm.sm_count");
  return hw;
}

HardwareProfile load_hardware_profile(const Catalog& catalog, std::string_view profile, const std::string& json_path) {
  return load_hardware_profile(catalog.entry("hw", profile, json_path), json_path);
}

}  // namespace megasim
