#pragma once
// Private storage of a Fabric: flat per-link and per-vertex arrays (the hot paths - routing,
// the flow model - read only these) and the Boost.Graph view of the same fabric (one edge per
// link direction, edge bundle = LinkId), built from the arrays on first use: only graph
// algorithms and the GraphViz writer need it, and at 100,000 GPUs it is a million edges.
#include <array>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "megasim/net/fabric.hpp"

namespace megasim {

struct VertexInfo {
  VertexKind kind = VertexKind::Gpu;
  int index = 0;
};

struct EdgeInfo {
  LinkId id = kNoLink;
};

// Edges in a vector (the last vecS), not BGL's default list node per edge.
using FabricGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS,
                                          VertexInfo, EdgeInfo, boost::no_property, boost::vecS>;

struct LinkInfo {
  VertexId src = 0;
  VertexId dst = 0;
  double latency_s = 0;
  LinkKind kind = LinkKind::NvLink;
  std::uint16_t parallel_index = 0;  // position among parallel links of the same vertex pair
  bool has_parallel = false;         // the pair has more than one link
};

struct FabricImpl {
  ClusterSpec cluster;
  FabricLayout layout;
  // Per vertex, link and GPU: huge-page backed (core/huge_pages.hpp), as they grow with the fabric.
  BigVector<VertexInfo> vertices;       // per VertexId
  BigVector<LinkInfo> links;            // per LinkId
  BigVector<double> capacity_Bps;       // per LinkId
  std::array<BigVector<VertexId>, kNumVertexKinds> by_kind;
  BigVector<GpuLinks> gpu_links;        // per GPU
  BigVector<int> gpu_tor;               // per GPU: ToR index

  VertexId add_vertex(VertexKind kind, int index);
  // Adds physical link a<->b; returns the a->b LinkId (b->a is that + 1). Latencies are per
  // direction because the NIC's per-message cost is charged on the sending side only.
  LinkId add_link(VertexId a, VertexId b, LinkKind kind, double capacity_Bps,
                  double latency_ab_s, double latency_ba_s, int parallel_index = 0,
                  bool has_parallel = false);
  // Adds `count` parallel links a<->b (count >= 1).
  void add_parallel_links(VertexId a, VertexId b, LinkKind kind, double capacity_Bps,
                          double latency_s, int count);

  // The Boost.Graph view, built once on first call (thread-safe; the fabric is complete by then).
  const FabricGraph& graph() const;
  // A vertex's out links, ascending: one CSR over every link, built on first call (only the
  // router reads them, and only a switch's; a per-vertex vector for each of a 100,000-GPU
  // fabric's GPUs and NICs was 7% of building it).
  std::span<const LinkId> out_links(VertexId v) const;

 private:
  mutable std::once_flag graph_built_;
  mutable FabricGraph graph_;
  mutable std::once_flag out_built_;
  mutable BigVector<std::size_t> out_begin_;  // per vertex + 1
  mutable BigVector<LinkId> out_;
};

}  // namespace megasim
