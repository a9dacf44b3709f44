#pragma once
// What `megasim topology` reports about a fabric: switch counts per tier, physical links by
// kind, bisection bandwidth and oversubscription; and its GraphViz drawing.
#include <cstddef>
#include <ostream>
#include <vector>

#include "megasim/net/fabric.hpp"

namespace megasim {

struct LinkKindSummary {
  LinkKind kind = LinkKind::NvLink;
  std::size_t physical_links = 0;  // full-duplex links (each is two LinkIds)
  double capacity_Bps = 0;         // per link, per direction (the largest, if they differ)
  double total_up_Bps = 0;         // sum over links of the upward direction
};

struct TopologySummary {
  FabricLayout layout;
  std::size_t num_nvswitches = 0;
  std::size_t num_nics = 0;
  std::size_t num_tors = 0;
  std::size_t num_aggs = 0;
  std::size_t num_spines = 0;
  std::vector<LinkKindSummary> links;  // kinds present, enum order
  // Bisection bandwidth, one direction: the minimum, over cuts splitting the GPUs into two
  // equal halves, of the capacity crossing the cut. For these hierarchical fabrics the
  // minimum is taken tier by tier: half the GPUs send through half of each tier's upward
  // capacity (for a Clos the tightest is the spine-facing capacity of one half), so
  //   bisection = min over tiers of (upward capacity of the tier) / 2,
  // over the PCIe, NIC-ToR and switch tiers for multi-node clusters (cuts then follow node
  // boundaries, so NVLink does not limit them), over NVLink for a single node.
  double bisection_Bps = 0;
  // Design down:up capacity ratios from switch ports: ToR = all its NIC ports (populated or
  // not) : its uplinks; aggregation = a full pod's ToR-facing : spine-facing links. 0 where
  // the tier has no uplinks.
  double tor_oversubscription = 0;
  double agg_oversubscription = 0;
};

TopologySummary summarize_topology(const Fabric& fabric);

// Human-readable summary (what `megasim topology CONFIG` prints).
void print_topology_summary(const TopologySummary& summary, std::ostream& out);

// Largest cluster write_dot() draws; bigger drawings are unreadable and huge.
inline constexpr int kMaxDotGpus = 512;

// GraphViz drawing (boost::write_graphviz), one undirected edge per physical link labelled
// with its kind and rate. Throws InputError("--dot", ...) above kMaxDotGpus GPUs.
void write_dot(const Fabric& fabric, std::ostream& out);

}  // namespace megasim
