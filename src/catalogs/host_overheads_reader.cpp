// configs/hw/host.json -> HostOverheads.
#include "megasim/catalogs/host_overheads.hpp"

#include <nlohmann/json.hpp>

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

}  // namespace megasim
