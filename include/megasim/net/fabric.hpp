#pragma once
// The cluster fabric: every GPU, NVSwitch crossbar, NIC and switch of a cluster, and every
// link direction between them with its capacity and latency. Built once per cluster by
// build_fabric() (topology_builders.hpp); read by routing (router.hpp), the flow model
// (link_capacity_Bps) and reports (link_name). The Boost.Graph storage stays in src/ behind
// a pimpl; a Fabric is immutable and cheap to copy (copies share the built graph).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "megasim/config/specs.hpp"
#include "megasim/core/huge_pages.hpp"
#include "megasim/net/link.hpp"

namespace megasim {

using VertexId = std::uint32_t;

// Vertex kinds in tier order: a link whose source has the lower tier goes "up".
enum class VertexKind : std::uint8_t { Gpu, NvSwitch, Nic, Tor, Agg, Spine };
inline constexpr std::size_t kNumVertexKinds = 6;

// Physical link kinds. TorSpine is the tier-2 link of two-tier fabrics (fat-tree leaf-spine,
// rail-only rail spines); TorAgg and AggSpine belong to the three-tier rail-optimised Clos.
enum class LinkKind : std::uint8_t { NvLink, Pcie, NicTor, TorAgg, AggSpine, TorSpine };
inline constexpr std::size_t kNumLinkKinds = 6;

const char* to_string(VertexKind kind);
const char* to_string(LinkKind kind);
// True for links between switches (where ECMP chooses among equal-cost ports).
bool is_switch_link(LinkKind kind);

// How the builder sized the fabric; every count is derived in topology_builders.cpp.
struct FabricLayout {
  Topology topology = Topology::RailOptimizedClos;
  int num_gpus = 0;
  int gpus_per_node = 0;
  int num_nodes = 0;
  int nvlink_domain_size = 0;      // GPUs per NVLink fabric (one NVSwitch crossbar vertex each)
  int num_domains = 0;
  int rails = 0;                   // NICs per node; rail r = NIC r of every node
  int tor_down_ports = 0;          // switch ports facing servers (before splitting)
  int tor_up_ports = 0;            // switch ports facing tier 2
  int nic_ports_per_tor = 0;       // tor_down_ports, doubled when ports are split
  int servers_per_tor = 0;         // servers under one ToR (set)
  int num_tor_sets = 0;            // rail topologies: groups of `rails` ToRs; fat-tree: leaves
  int num_tors = 0;
  int tors_per_pod = 0;            // rail-optimised Clos only
  int num_pods = 0;                // rail-optimised Clos only (1 when there is no spine tier)
  int aggs_per_pod = 0;
  int tor_tier2_parallel_links = 0;    // parallel links between a ToR and each tier-2 switch
  int spines_per_group = 0;            // per plane (Clos), per rail (rail-only), total (fat-tree)
  int agg_spine_parallel_links = 0;    // Clos: parallel links between an agg and each spine
  int num_aggs = 0;
  int num_spines = 0;
};

// Per-GPU attachment links, one direction each (kNoLink where absent, e.g. no NVSwitch on a
// one-GPU node).
struct GpuLinks {
  LinkId to_nvswitch = kNoLink;
  LinkId from_nvswitch = kNoLink;
  LinkId to_nic = kNoLink;
  LinkId from_nic = kNoLink;
  LinkId nic_to_tor = kNoLink;     // the GPU's NIC uplink (shared by GPUs sharing a NIC)
  LinkId tor_to_nic = kNoLink;
};

struct FabricImpl;

class Fabric {
 public:
  explicit Fabric(std::shared_ptr<const FabricImpl> impl);

  const ClusterSpec& cluster() const;
  const FabricLayout& layout() const;
  Topology topology() const { return layout().topology; }
  int num_gpus() const { return layout().num_gpus; }

  // Link directions: LinkId 2i and 2i+1 are the two directions of physical link i.
  std::size_t num_links() const;
  const BigVector<double>& link_capacity_Bps() const;
  double link_latency_s(LinkId link) const;
  LinkKind link_kind(LinkId link) const;
  VertexId link_src(LinkId link) const;
  VertexId link_dst(LinkId link) const;
  bool link_is_up(LinkId link) const;          // from a lower to a higher tier
  std::string link_name(LinkId link) const;    // e.g. "node12.gpu3->nvswitch12", "tor5->agg2#1"
  static LinkId reverse(LinkId link) { return link ^ 1U; }

  // Vertices.
  std::size_t num_vertices() const;
  VertexKind vertex_kind(VertexId v) const;
  int vertex_index(VertexId v) const;          // index within its kind (gpu id, tor id, ...)
  std::string vertex_name(VertexId v) const;
  std::span<const LinkId> out_links(VertexId v) const;  // ascending LinkId
  std::size_t num_vertices_of(VertexKind kind) const;
  VertexId vertex_of(VertexKind kind, int index) const;

  // GPU placement.
  int node_of_gpu(int gpu) const;              // host
  int domain_of_gpu(int gpu) const;            // NVLink domain (= host on DGX/HGX)
  int rail_of_gpu(int gpu) const;
  int tor_of_gpu(int gpu) const;               // ToR (leaf) index of the GPU's NIC
  int gpu_on_rail(int node, int rail) const;   // first GPU of `node` attached to NIC `rail`
  const GpuLinks& gpu_links(int gpu) const;

  // Switch counts per tier.
  int num_tors() const { return layout().num_tors; }
  int num_aggs() const { return layout().num_aggs; }
  int num_spines() const { return layout().num_spines; }

  const FabricImpl& impl() const { return *impl_; }

 private:
  std::shared_ptr<const FabricImpl> impl_;
};

}  // namespace megasim
