// NcclModel's lookups: architecture class, transport efficiency by GPU and NIC, the tree
// correction table. The catalog reader is megasim/catalogs/nccl_model_reader.hpp.
#include "megasim/coll/nccl_model.hpp"

#include <cmath>
#include <limits>

namespace megasim {

GpuArchClass arch_class_of_sm(int architecture_sm) {
  if (architecture_sm >= 90) return GpuArchClass::Hopper;
  if (architecture_sm >= 80) return GpuArchClass::Ampere;
  return GpuArchClass::Volta;
}

double NcclModel::nvlink_fraction(int architecture_sm) const {
  // Highest entry whose minimum architecture the GPU reaches (Blackwell uses Hopper's until a
  // published NVLink5 figure is catalogued).
  double f = nvlink.empty() ? 1.0 : nvlink.front().second.fraction();
  for (const auto& [min_sm, eff] : nvlink)
    if (architecture_sm >= min_sm) f = eff.fraction();
  return f;
}

double NcclModel::network_fraction(double nic_line_Bps) const {
  // Nearest catalogued line rate on a log scale (HDR for 200G, NDR for 400G).
  double best = std::numeric_limits<double>::infinity();
  double f = 1.0;
  for (const auto& eff : network) {
    const double d = std::fabs(std::log(nic_line_Bps / eff.line_Bps));
    if (d < best) { best = d; f = eff.fraction(); }
  }
  return f;
}

NcclModel without_all_to_all_derating(NcclModel m) {
  m.all_to_all_network_factor = 1.0;
  return m;
}

double NcclModel::tree_correction_factor(NcclProto p, double size_bytes) const {
  const auto& table = tree_correction[static_cast<std::size_t>(p)];
  const double units = std::floor(size_bytes / 64.0);
  const int log_size = units < 1.0 ? 0 : static_cast<int>(std::floor(std::log2(units)));
  if (log_size < 0 || static_cast<std::size_t>(log_size) >= table.size()) return 1.0;
  return table[static_cast<std::size_t>(log_size)];
}

}  // namespace megasim
