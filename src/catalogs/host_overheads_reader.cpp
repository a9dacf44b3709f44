// configs/hw/host.json -> HostOverheads.
#include "megasim/catalogs/host_overheads.hpp"

#include <nlohmann/json.hpp>

#include "catalogs/sourced_figure.hpp"
#include "megasim/config/catalog.hpp"
#include "megasim/config/strict_keys.hpp"

namespace megasim {

HostOverheads load_host_overheads(const Catalog& catalog) {
  const auto j = catalog.entry("hw", "host", "hw.host");
  require_known_keys(j, "hw.host", {"name", "description", "loader_first_batch_s", "gc_pause_s", "p2p_sync_gap_s"});
  using catalogs_detail::sourced_figure;
  return HostOverheads{sourced_figure(j, "hw.host", "loader_first_batch_s", 0),
                       sourced_figure(j, "hw.host", "gc_pause_s", 0),
                       sourced_figure(j, "hw.host", "p2p_sync_gap_s", 0)};
}

}  // namespace megasim
