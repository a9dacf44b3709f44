#include "host_overheads.hpp"

#include "megasim/config/catalog.hpp"
#include "megasim/config/strict_keys.hpp"
#include "megasim/core/error.hpp"

namespace megasim {

namespace {

double figure(const nlohmann::json& j, const char* key) {
  const std::string path = std::string("hw.host.") + key;
  if (!j.contains(key) || !j[key].is_object() || !j[key].contains("value") ||
      !j[key]["value"].is_number() || !j[key].contains("source")) {
    throw InputError(path, "needs {\"value\": number, \"source\": text}");
  }
  require_known_keys(j[key], path, {"value", "source"});
  const double v = j[key]["value"].get<double>();
  if (!(v >= 0)) throw InputError(path, "must be >= 0");
  return v;
}

}  // namespace

HostOverheads load_host_overheads(const Catalog& catalog) {
  const auto j = catalog.entry("hw", "host", "hw.host");
  require_known_keys(j, "hw.host", {"name", "description", "loader_first_batch_s", "gc_pause_s", "p2p_sync_gap_s"});
  return HostOverheads{figure(j, "loader_first_batch_s"), figure(j, "gc_pause_s"),
                       figure(j, "p2p_sync_gap_s")};
}

double data_loading_time_s(const HostOverheads& h, const SystemSpec& sys, int gpus_per_node) {
  if (sys.async_data_preprocessing) return 0.0;
  const double loaders = sys.data_loader_per_node ? 1.0 : static_cast<double>(gpus_per_node);
  return h.loader_first_batch_s * loaders;
}

double gc_skew_time_s(const HostOverheads& h, const SystemSpec& sys, std::int64_t dp) {
  if (sys.gc_stragglers_fixed || dp <= 1) return 0.0;
  return h.gc_pause_s;
}

double p2p_sync_gap_time_s(const HostOverheads& h, const SystemSpec& sys, int pipeline_stages) {
  if (sys.pp_overlap || pipeline_stages <= 1) return 0.0;
  return h.p2p_sync_gap_s;
}

}  // namespace megasim
