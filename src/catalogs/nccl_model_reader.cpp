// Loads the NCCL tuning-model catalog (configs/nccl/*.json) into NcclModel.
#include "megasim/catalogs/nccl_model_reader.hpp"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "megasim/config/catalog.hpp"
#include "megasim/config/load.hpp"
#include "megasim/config/strict_keys.hpp"
#include "megasim/core/error.hpp"
#include "catalogs/sourced_figure.hpp"

namespace megasim {
namespace {

constexpr double kUs = 1e-6;
constexpr double kGBps = 1e9;

const nlohmann::json& at(const nlohmann::json& j, const std::string& key, const std::string& path) {
  if (!j.is_object() || !j.contains(key)) throw InputError(join_path(path, key), "is required");
  return j.at(key);
}

double number(const nlohmann::json& j, const std::string& key, const std::string& path) {
  const auto& v = at(j, key, path);
  if (!v.is_number()) throw InputError(join_path(path, key), "must be a number");
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < 0) throw InputError(join_path(path, key), "must be finite and >= 0");
  return x;
}

double positive(const nlohmann::json& j, const std::string& key, const std::string& path) {
  const double x = number(j, key, path);
  if (x <= 0) throw InputError(join_path(path, key), "must be > 0");
  return x;
}

std::vector<double> numbers(const nlohmann::json& v, const std::string& path, std::size_t n,
                            double scale) {
  if (!v.is_array() || (n != 0 && v.size() != n))
    throw InputError(path, n ? "must be an array of " + std::to_string(n) + " numbers"
                             : "must be an array of numbers");
  std::vector<double> out;
  for (const auto& x : v) {
    if (!x.is_number() || x.get<double>() < 0) throw InputError(path, "entries must be numbers >= 0");
    out.push_back(x.get<double>() * scale);
  }
  return out;
}

ProtoTable proto_table(const nlohmann::json& j, const std::string& key, const std::string& path,
                       double scale) {
  const auto v = numbers(at(j, key, path), join_path(path, key), 3, scale);
  return {v[0], v[1], v[2]};
}

std::array<ProtoTable, 2> lat_table(const nlohmann::json& j, const std::string& key,
                                    const std::string& path) {
  const auto& t = at(j, key, path);
  const std::string p = join_path(path, key);
  require_known_keys(t, p, {"tree", "ring"});
  return {proto_table(t, "tree", p, kUs), proto_table(t, "ring", p, kUs)};
}

ArchNodeTable arch_node_table(const nlohmann::json& j, const std::string& key,
                              const std::string& path) {
  const auto& t = at(j, key, path);
  const std::string p = join_path(path, key);
  if (!t.is_array() || t.size() != 3) throw InputError(p, "must be 3 rows (Volta, Ampere, Hopper)");
  ArchNodeTable out{};
  for (std::size_t a = 0; a < 3; ++a) {
    const auto row = numbers(t[a], p + "[" + std::to_string(a) + "]", 3, kGBps);
    out[a] = {row[0], row[1], row[2]};
  }
  return out;
}

std::array<double, 3> triple(const nlohmann::json& j, const std::string& key, const std::string& path) {
  const auto v = numbers(at(j, key, path), join_path(path, key), 3, kGBps);
  return {v[0], v[1], v[2]};
}

TransportEfficiency transport(const nlohmann::json& e, const std::string& path) {
  require_known_keys(e, path, {"name", "min_architecture_sm", "line_GBps", "achieved_busbw_GBps", "source"});
  TransportEfficiency t;
  const auto& name = at(e, "name", path);
  if (!name.is_string()) throw InputError(join_path(path, "name"), "must be a string");
  t.name = name.get<std::string>();
  t.line_Bps = positive(e, "line_GBps", path) * kGBps;
  t.achieved_busbw_Bps = positive(e, "achieved_busbw_GBps", path) * kGBps;
  if (!at(e, "source", path).is_string()) throw InputError(join_path(path, "source"), "must be a string");
  if (t.achieved_busbw_Bps > t.line_Bps)
    throw InputError(join_path(path, "achieved_busbw_GBps"), "must not exceed line_GBps");
  return t;
}

}  // namespace

NcclModel nccl_model_from_json(const nlohmann::json& j, const std::string& path) {
  // Every object is checked for keys this reader does not understand ("source" and "note" carry
  // provenance); a misspelt figure is an error, not a default.
  require_known_keys(j, path, {"name", "source", "latency_us", "net_overhead", "ring_plateau", "bandwidth_caps_GBps",
                               "protocol_efficiency", "tree_correction", "channels", "transport_efficiency"});
  NcclModel m;
  const auto& name = at(j, "name", path);
  if (!name.is_string()) throw InputError(join_path(path, "name"), "must be a string");
  m.name = name.get<std::string>();
  if (!at(j, "source", path).is_string()) throw InputError(join_path(path, "source"), "must be a string");

  const std::string lp = join_path(path, "latency_us");
  const auto& lat = at(j, "latency_us", path);
  require_known_keys(lat, lp, {"source", "base", "nvlink", "pci", "net"});
  m.base_lat_s = lat_table(lat, "base", lp);
  m.hw_lat_nvlink_s = lat_table(lat, "nvlink", lp);
  m.hw_lat_pci_s = lat_table(lat, "pci", lp);
  m.hw_lat_net_s = lat_table(lat, "net", lp);

  const std::string np = join_path(path, "net_overhead");
  const auto& no = at(j, "net_overhead", path);
  require_known_keys(no, np, {"source", "per_step_us", "simple_factor"});
  m.net_overhead_s = number(no, "per_step_us", np) * kUs;
  m.net_overhead_simple_factor = positive(no, "simple_factor", np);

  const std::string rp = join_path(path, "ring_plateau");
  const auto& rpj = at(j, "ring_plateau", path);
  require_known_keys(rpj, rp, {"source", "factor", "factor_pre_ampere", "min_bytes_per_channel_rank"});
  m.ring_plateau_factor = positive(rpj, "factor", rp);
  m.ring_plateau_factor_pre_ampere = positive(rpj, "factor_pre_ampere", rp);
  m.ring_plateau_min_bytes = number(rpj, "min_bytes_per_channel_rank", rp);

  const std::string bp = join_path(path, "bandwidth_caps_GBps");
  const auto& caps = at(j, "bandwidth_caps_GBps", path);
  require_known_keys(caps, bp, {"source", "ll_max_single_node", "ll_max_multi_node_intel", "ring_ll128_per_channel",
                                "tree_per_channel", "tree_ll128_per_channel"});
  m.ll_max_single_node_Bps = triple(caps, "ll_max_single_node", bp);
  m.ll_max_multi_node_Bps = triple(caps, "ll_max_multi_node_intel", bp);
  m.ring_ll128_per_channel_Bps = arch_node_table(caps, "ring_ll128_per_channel", bp);
  m.tree_per_channel_Bps = arch_node_table(caps, "tree_per_channel", bp);
  m.tree_ll128_per_channel_Bps = arch_node_table(caps, "tree_ll128_per_channel", bp);

  const std::string pp = join_path(path, "protocol_efficiency");
  const auto& pe = at(j, "protocol_efficiency", path);
  require_known_keys(pe, pp, {"source", "ring_ll", "ring_ll128", "ring_ll128_one_rank_per_node", "tree", "tree_ll",
                              "tree_ll128_single_node", "tree_ll128_multi_node"});
  m.ring_ll_factor = positive(pe, "ring_ll", pp);
  m.ring_ll128_factor = positive(pe, "ring_ll128", pp);
  m.ring_ll128_factor_one_rank_per_node = positive(pe, "ring_ll128_one_rank_per_node", pp);
  m.tree_factor = positive(pe, "tree", pp);
  m.tree_ll_factor = positive(pe, "tree_ll", pp);
  m.tree_ll128_factor_single_node = positive(pe, "tree_ll128_single_node", pp);
  m.tree_ll128_factor_multi_node = positive(pe, "tree_ll128_multi_node", pp);

  const std::string tp = join_path(path, "tree_correction");
  const auto& tc = at(j, "tree_correction", path);
  require_known_keys(tc, tp, {"source", "LL", "LL128", "Simple"});
  m.tree_correction[0] = numbers(at(tc, "LL", tp), join_path(tp, "LL"), 0, 1.0);
  m.tree_correction[1] = numbers(at(tc, "LL128", tp), join_path(tp, "LL128"), 0, 1.0);
  m.tree_correction[2] = numbers(at(tc, "Simple", tp), join_path(tp, "Simple"), 0, 1.0);

  const std::string cp = join_path(path, "channels");
  const auto& ch = at(j, "channels", path);
  require_known_keys(ch, cp, {"source", "single_node", "per_nic", "max", "max_source"});
  m.channels_single_node = static_cast<int>(positive(ch, "single_node", cp));
  m.channels_per_nic = static_cast<int>(positive(ch, "per_nic", cp));
  m.channels_max = static_cast<int>(positive(ch, "max", cp));
  if (m.channels_single_node < 1 || m.channels_per_nic < 1 || m.channels_max < 1) {
    throw InputError(cp, "channel counts must be >= 1");
  }

  const std::string ep = join_path(path, "transport_efficiency");
  const auto& te = at(j, "transport_efficiency", path);
  require_known_keys(te, ep, {"note", "nvlink", "network", "all_to_all_network_factor"});
  const auto& nv = at(te, "nvlink", ep);
  const auto& net = at(te, "network", ep);
  if (!nv.is_array() || nv.empty()) throw InputError(join_path(ep, "nvlink"), "must be a non-empty array");
  if (!net.is_array() || net.empty()) throw InputError(join_path(ep, "network"), "must be a non-empty array");
  for (std::size_t i = 0; i < nv.size(); ++i) {
    const std::string ip = join_path(ep, "nvlink") + "[" + std::to_string(i) + "]";
    const int min_sm = static_cast<int>(number(nv[i], "min_architecture_sm", ip));
    if (!m.nvlink.empty() && min_sm <= m.nvlink.back().first)
      throw InputError(join_path(ip, "min_architecture_sm"), "must increase from entry to entry");
    m.nvlink.emplace_back(min_sm, transport(nv[i], ip));
  }
  for (std::size_t i = 0; i < net.size(); ++i)
    m.network.push_back(transport(net[i], join_path(ep, "network") + "[" + std::to_string(i) + "]"));
  // A fraction of the network figure: (0, 1], never above what ring collectives reach.
  m.all_to_all_network_factor = catalogs_detail::sourced_figure(te, ep, "all_to_all_network_factor", 1e-3, 1.0);
  return m;
}

NcclModel load_nccl_model(const std::filesystem::path& file) {
  return nccl_model_from_json(read_json_file(file, file.string()), "");
}

NcclModel load_default_nccl_model(const std::filesystem::path& configs_dir) {
  return load_nccl_model(configs_dir / "nccl" / "nccl-2.21.json");
}

NcclModel load_nccl_model(const Catalog& catalog, std::string_view name, const std::string& option) {
  return nccl_model_from_json(catalog.entry("nccl", name, option), "nccl");
}

}  // namespace megasim
