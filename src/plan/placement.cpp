#include "megasim/plan/placement.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "megasim/core/error.hpp"

namespace megasim {

Placement::Placement(const ParallelSpec& p, const ClusterSpec& cluster)
    : tp_(p.tensor_model_parallel_size),
      cp_(p.context_parallel_size),
      pp_(p.pipeline_model_parallel_size),
      gpus_per_node_(cluster.gpus_per_node),
      servers_per_tor_(cluster.network.servers_per_tor),
      order_(p.placement) {
  if (tp_ < 1) throw InputError("parallel.tensor_model_parallel_size", "must be >= 1");
  if (cp_ < 1) throw InputError("parallel.context_parallel_size", "must be >= 1");
  if (pp_ < 1) throw InputError("parallel.pipeline_model_parallel_size", "must be >= 1");
  if (gpus_per_node_ < 1) throw InputError("cluster.gpus_per_node", "must be >= 1");
  world_ = cluster.num_gpus;
  const std::int64_t model_ranks = static_cast<std::int64_t>(tp_) * cp_ * pp_;
  if (world_ < 1 || world_ % model_ranks != 0) {
    throw InputError("cluster.num_gpus", "must be a positive multiple of TP*CP*PP = " +
                                             std::to_string(model_ranks));
  }
  dp_ = p.data_parallel_size > 0 ? p.data_parallel_size : world_ / model_ranks;
  if (dp_ * model_ranks != world_) {
    throw InputError("parallel", "TP*CP*PP*DP must equal cluster.num_gpus");
  }
  // TP is innermost: a TP group must fit in an NVLink domain or cover whole domains.
  const int domain = nvlink_domain_gpus(cluster);
  if (domain % tp_ != 0 && tp_ % domain != 0) {
    throw InputError("parallel.tensor_model_parallel_size",
                     "must divide the NVLink domain size " + std::to_string(domain) +
                         " or be a multiple of it (TP groups stay on NVLink)");
  }
}

std::int64_t Placement::rank_of(const RankCoord& c) const {
  const std::int64_t inner = c.tp + static_cast<std::int64_t>(tp_) * c.cp;  // tp, cp innermost
  const std::int64_t tc = static_cast<std::int64_t>(tp_) * cp_;
  if (order_ == PlacementOrder::DpFirst) return inner + tc * (c.dp + dp_ * c.pp);
  return inner + tc * (c.pp + static_cast<std::int64_t>(pp_) * c.dp);
}

RankCoord Placement::coord_of(std::int64_t rank) const {
  RankCoord c;
  c.tp = static_cast<int>(rank % tp_);
  std::int64_t rest = rank / tp_;
  c.cp = static_cast<int>(rest % cp_);
  rest /= cp_;
  if (order_ == PlacementOrder::DpFirst) {
    c.dp = rest % dp_;
    c.pp = static_cast<int>(rest / dp_);
  } else {
    c.pp = static_cast<int>(rest % pp_);
    c.dp = rest / pp_;
  }
  return c;
}

int Placement::tor_set_of_gpu(int gpu) const {
  if (servers_per_tor_ <= 0) return -1;
  return node_of_gpu(gpu) / servers_per_tor_;
}

namespace {

// Ranks that differ from `rank` only along one parallel dimension, in that dimension's order.
template <typename Field, typename Count>
std::vector<std::int64_t> group_along(const Placement& pl, std::int64_t rank, Field RankCoord::*field,
                                      Count size) {
  RankCoord c = pl.coord_of(rank);
  std::vector<std::int64_t> out;
  for (c.*field = 0; c.*field < size; ++(c.*field)) out.push_back(pl.rank_of(c));
  return out;
}

}  // namespace

std::vector<std::int64_t> Placement::tp_group(std::int64_t rank) const {
  return group_along(*this, rank, &RankCoord::tp, tp_);
}

std::vector<std::int64_t> Placement::cp_group(std::int64_t rank) const {
  return group_along(*this, rank, &RankCoord::cp, cp_);
}

std::vector<std::int64_t> Placement::dp_group(std::int64_t rank) const {
  return group_along(*this, rank, &RankCoord::dp, dp_);
}

std::vector<std::int64_t> Placement::pp_group(std::int64_t rank) const {
  return group_along(*this, rank, &RankCoord::pp, pp_);
}

std::string render_placement_table(const Placement& pl, std::int64_t max_rows) {
  std::ostringstream os;
  os << "placement " << (pl.order() == PlacementOrder::DpFirst ? "dp-first (tp,cp,dp,pp)"
                                                               : "pp-first (tp,cp,pp,dp)")
     << ": " << pl.world_size() << " ranks, TP " << pl.tp() << " CP " << pl.cp() << " DP "
     << pl.dp() << " PP " << pl.pp() << "\n";
  os << std::setw(8) << "rank" << std::setw(5) << "tp" << std::setw(5) << "cp" << std::setw(8)
     << "dp" << std::setw(5) << "pp" << std::setw(8) << "gpu" << std::setw(7) << "node"
     << std::setw(7) << "local" << std::setw(8) << "tor_set" << "\n";
  auto row = [&](std::int64_t r) {
    const RankCoord c = pl.coord_of(r);
    const int gpu = pl.gpu_of(c);
    const int tor = pl.tor_set_of_gpu(gpu);
    os << std::setw(8) << r << std::setw(5) << c.tp << std::setw(5) << c.cp << std::setw(8)
       << c.dp << std::setw(5) << c.pp << std::setw(8) << gpu << std::setw(7)
       << pl.node_of_gpu(gpu) << std::setw(7) << gpu % pl.gpus_per_node() << std::setw(8)
       << (tor < 0 ? std::string("-") : std::to_string(tor)) << "\n";
  };
  const std::int64_t n = pl.world_size();
  const std::int64_t limit = std::max<std::int64_t>(max_rows, 1);
  if (n <= limit + 8) {
    for (std::int64_t r = 0; r < n; ++r) row(r);
  } else {
    for (std::int64_t r = 0; r < limit; ++r) row(r);
    os << "     ... (" << n - limit - 8 << " ranks not shown)\n";
    for (std::int64_t r = n - 8; r < n; ++r) row(r);
  }
  return os.str();
}

}  // namespace megasim
