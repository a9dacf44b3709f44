// Fabric accessors and naming; the graph itself is filled by the builders.
#include "megasim/net/fabric.hpp"

#include <stdexcept>
#include <string>
#include <utility>

#include "net/topo/fabric_impl.hpp"

namespace megasim {

const char* to_string(VertexKind kind) {
  switch (kind) {
    case VertexKind::Gpu: return "gpu";
    case VertexKind::NvSwitch: return "nvswitch";
    case VertexKind::Nic: return "nic";
    case VertexKind::Tor: return "tor";
    case VertexKind::Agg: return "agg";
    case VertexKind::Spine: return "spine";
  }
  return "?";
}

const char* to_string(LinkKind kind) {
  switch (kind) {
    case LinkKind::NvLink: return "nvlink";
    case LinkKind::Pcie: return "pcie";
    case LinkKind::NicTor: return "nic-tor";
    case LinkKind::TorAgg: return "tor-agg";
    case LinkKind::AggSpine: return "agg-spine";
    case LinkKind::TorSpine: return "tor-spine";
  }
  return "?";
}

bool is_switch_link(LinkKind kind) {
  return kind == LinkKind::TorAgg || kind == LinkKind::AggSpine || kind == LinkKind::TorSpine;
}

VertexId FabricImpl::add_vertex(VertexKind kind, int index) {
  const auto v = static_cast<VertexId>(vertices.size());
  vertices.push_back(VertexInfo{kind, index});
  by_kind[static_cast<std::size_t>(kind)].push_back(v);
  return v;
}

LinkId FabricImpl::add_link(VertexId a, VertexId b, LinkKind kind, double capacity,
                            double latency_ab_s, double latency_ba_s, int parallel_index,
                            bool has_parallel) {
  const auto ab = static_cast<LinkId>(links.size());
  const auto pidx = static_cast<std::uint16_t>(parallel_index);
  links.push_back(LinkInfo{a, b, latency_ab_s, kind, pidx, has_parallel});
  links.push_back(LinkInfo{b, a, latency_ba_s, kind, pidx, has_parallel});
  capacity_Bps.push_back(capacity);
  capacity_Bps.push_back(capacity);
  return ab;
}

const FabricGraph& FabricImpl::graph() const {
  std::call_once(graph_built_, [this] {
    graph_ = FabricGraph(vertices.size());
    for (std::size_t v = 0; v < vertices.size(); ++v) graph_[v] = vertices[v];
    graph_.m_edges.reserve(links.size());
    for (std::size_t l = 0; l < links.size(); ++l) {
      boost::add_edge(links[l].src, links[l].dst, EdgeInfo{static_cast<LinkId>(l)}, graph_);
    }
  });
  return graph_;
}

std::span<const LinkId> FabricImpl::out_links(VertexId v) const {
  std::call_once(out_built_, [this] {
    // Counting sort of the links by source vertex; links are visited in ascending id.
    out_begin_.assign(vertices.size() + 1, 0);
    for (const LinkInfo& l : links) ++out_begin_[l.src + 1];
    for (std::size_t i = 1; i < out_begin_.size(); ++i) out_begin_[i] += out_begin_[i - 1];
    out_.resize(links.size());
    std::vector<std::size_t> next(out_begin_.begin(), out_begin_.end() - 1);
    for (std::size_t l = 0; l < links.size(); ++l) out_[next[links[l].src]++] = static_cast<LinkId>(l);
  });
  const std::size_t at = v;
  if (at >= vertices.size()) throw std::out_of_range("Fabric: vertex " + std::to_string(v) + " out of range");
  return {out_.data() + out_begin_[at], out_begin_[at + 1] - out_begin_[at]};
}

void FabricImpl::add_parallel_links(VertexId a, VertexId b, LinkKind kind, double capacity,
                                    double latency_s, int count) {
  for (int i = 0; i < count; ++i) {
    add_link(a, b, kind, capacity, latency_s, latency_s, i, count > 1);
  }
}

Fabric::Fabric(std::shared_ptr<const FabricImpl> impl) : impl_(std::move(impl)) {
  if (!impl_) throw std::invalid_argument("Fabric: null implementation");
}

const ClusterSpec& Fabric::cluster() const { return impl_->cluster; }
const FabricLayout& Fabric::layout() const { return impl_->layout; }
std::size_t Fabric::num_links() const { return impl_->links.size(); }
const BigVector<double>& Fabric::link_capacity_Bps() const { return impl_->capacity_Bps; }
double Fabric::link_latency_s(LinkId link) const { return impl_->links.at(link).latency_s; }
LinkKind Fabric::link_kind(LinkId link) const { return impl_->links.at(link).kind; }
VertexId Fabric::link_src(LinkId link) const { return impl_->links.at(link).src; }
VertexId Fabric::link_dst(LinkId link) const { return impl_->links.at(link).dst; }

bool Fabric::link_is_up(LinkId link) const {
  const LinkInfo& l = impl_->links.at(link);
  return vertex_kind(l.src) < vertex_kind(l.dst);
}

std::string Fabric::link_name(LinkId link) const {
  const LinkInfo& l = impl_->links.at(link);
  std::string name = vertex_name(l.src) + "->" + vertex_name(l.dst);
  if (l.has_parallel) name += "#" + std::to_string(l.parallel_index);
  return name;
}

std::size_t Fabric::num_vertices() const { return impl_->vertices.size(); }

VertexKind Fabric::vertex_kind(VertexId v) const { return impl_->vertices[v].kind; }
int Fabric::vertex_index(VertexId v) const { return impl_->vertices[v].index; }

std::string Fabric::vertex_name(VertexId v) const {
  const VertexInfo& info = impl_->vertices[v];
  const int per_node = impl_->layout.gpus_per_node;
  const int rails = impl_->layout.rails;
  switch (info.kind) {
    case VertexKind::Gpu:
      return "node" + std::to_string(info.index / per_node) + ".gpu" +
             std::to_string(info.index % per_node);
    case VertexKind::Nic:
      return "node" + std::to_string(info.index / rails) + ".nic" +
             std::to_string(info.index % rails);
    case VertexKind::NvSwitch:
    case VertexKind::Tor:
    case VertexKind::Agg:
    case VertexKind::Spine:
      return std::string(to_string(info.kind)) + std::to_string(info.index);
  }
  return "?";
}

std::span<const LinkId> Fabric::out_links(VertexId v) const { return impl_->out_links(v); }

std::size_t Fabric::num_vertices_of(VertexKind kind) const {
  return impl_->by_kind[static_cast<std::size_t>(kind)].size();
}

VertexId Fabric::vertex_of(VertexKind kind, int index) const {
  return impl_->by_kind[static_cast<std::size_t>(kind)].at(static_cast<std::size_t>(index));
}

int Fabric::node_of_gpu(int gpu) const {
  if (gpu < 0 || gpu >= num_gpus()) throw std::out_of_range("node_of_gpu: bad GPU id");
  return gpu / impl_->layout.gpus_per_node;
}

int Fabric::domain_of_gpu(int gpu) const {
  if (gpu < 0 || gpu >= num_gpus()) throw std::out_of_range("domain_of_gpu: bad GPU id");
  return gpu / impl_->layout.nvlink_domain_size;
}

int Fabric::rail_of_gpu(int gpu) const {
  if (gpu < 0 || gpu >= num_gpus()) throw std::out_of_range("rail_of_gpu: bad GPU id");
  // GPUs of a node share NICs in contiguous groups (gpus_per_node is a multiple of rails).
  const FabricLayout& lay = impl_->layout;
  return (gpu % lay.gpus_per_node) / (lay.gpus_per_node / lay.rails);
}

int Fabric::tor_of_gpu(int gpu) const {
  return impl_->gpu_tor.at(static_cast<std::size_t>(gpu));
}

int Fabric::gpu_on_rail(int node, int rail) const {
  const FabricLayout& lay = impl_->layout;
  if (node < 0 || node >= lay.num_nodes || rail < 0 || rail >= lay.rails) {
    throw std::out_of_range("gpu_on_rail: bad node or rail");
  }
  return node * lay.gpus_per_node + rail * (lay.gpus_per_node / lay.rails);
}

const GpuLinks& Fabric::gpu_links(int gpu) const {
  return impl_->gpu_links.at(static_cast<std::size_t>(gpu));
}

}  // namespace megasim
