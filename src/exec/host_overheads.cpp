#include "host_overheads.hpp"

namespace megasim {

double data_loading_time_s(const HostOverheads& h, const SystemSpec& sys, int gpus_per_node) {
  if (sys.async_data_preprocessing) return 0.0;
  const double loaders = sys.data_loader_per_node ? 1.0 : static_cast<double>(gpus_per_node);
  return h.loader_first_batch_s * loaders;
}

double gc_skew_time_s(const HostOverheads& h, const SystemSpec& sys, std::int64_t dp) {
  if (sys.gc_stragglers_fixed || dp <= 1) return 0.0;
  return h.gc_pause_s;
}

double p2p_sync_gap_time_s(const HostOverheads& h, bool pp_overlap, int pipeline_stages) {
  if (pp_overlap || pipeline_stages <= 1) return 0.0;
  return h.p2p_sync_gap_s;
}

}  // namespace megasim
