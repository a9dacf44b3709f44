// GraphViz output of a fabric through boost::write_graphviz.
#include <string>

#include <boost/graph/filtered_graph.hpp>
#include <boost/graph/graphviz.hpp>

#include "megasim/core/error.hpp"
#include "megasim/core/units.hpp"
#include "megasim/net/topology_summary.hpp"
#include "net/topo/fabric_impl.hpp"

namespace megasim {
namespace {

// Keeps one direction (the even LinkId) of every physical link.
struct OneDirection {
  const FabricGraph* graph = nullptr;
  bool operator()(FabricGraph::edge_descriptor e) const { return ((*graph)[e].id & 1U) == 0; }
};

const char* shape_of(VertexKind kind) {
  switch (kind) {
    case VertexKind::Gpu: return "box";
    case VertexKind::NvSwitch: return "hexagon";
    case VertexKind::Nic: return "ellipse";
    case VertexKind::Tor:
    case VertexKind::Agg:
    case VertexKind::Spine: return "octagon";
  }
  return "ellipse";
}

// Quotes a GraphViz ID (names contain '.', '>' and '#').
std::string quoted(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

void write_dot(const Fabric& fabric, std::ostream& out) {
  if (fabric.num_gpus() > kMaxDotGpus) {
    throw InputError("--dot", "drawings are limited to " + std::to_string(kMaxDotGpus) +
                                  " GPUs; this cluster has " +
                                  std::to_string(fabric.num_gpus()));
  }
  const FabricGraph& g = fabric.impl().graph();
  using Filtered = boost::filtered_graph<FabricGraph, OneDirection>;
  const Filtered one_way(g, OneDirection{&g});
  const auto vertex_writer = [&](std::ostream& os, Filtered::vertex_descriptor v) {
    const auto id = static_cast<VertexId>(v);
    os << "[label=" << quoted(fabric.vertex_name(id))
       << ", shape=" << shape_of(fabric.vertex_kind(id)) << "]";
  };
  const auto edge_writer = [&](std::ostream& os, Filtered::edge_descriptor e) {
    const LinkId l = g[e].id;
    os << "[label=" << quoted(std::string(to_string(fabric.link_kind(l))) + " " +
                              format_rate_GBps(fabric.link_capacity_Bps()[l]))
       << "]";
  };
  const auto graph_writer = [](std::ostream& os) {
    os << "rankdir=BT;\nedge [dir=none, fontsize=8];\nnode [fontsize=10];\n";
  };
  boost::write_graphviz(out, one_way, vertex_writer, edge_writer, graph_writer);
}

}  // namespace megasim
