#pragma once
// Parts shared by the three topology builders: input validation, the servers (GPUs,
// NVSwitch, NICs) and the NIC-to-ToR attachment.
#include <memory>

#include "megasim/config/specs.hpp"
#include "net/topo/fabric_impl.hpp"

namespace megasim {

// Whether the fabric has a scale-out network: always when the job spans several nodes; inside
// one node only when the cluster gives a NIC figure (a job inside one node needs none).
bool has_scale_out(const ClusterSpec& cluster);

// Validates the cluster, fills the node-level layout fields (gpus, nodes, rails, ToR port
// split) and creates GPUs, NVSwitches and (with a scale-out network) NICs with their NVLink
// and PCIe links. Without a scale-out network the builders stop here: no NIC, no switch tier.
std::shared_ptr<FabricImpl> build_servers(const ClusterSpec& cluster, Topology topology);

// Creates `count` vertices of `kind` (indices 0..count-1), returning the first VertexId (they are contiguous).
VertexId add_vertices(FabricImpl& impl, VertexKind kind, int count);

// Connects NIC `rail` of `node` to ToR `tor` (a Tor vertex index) and records the ToR for the
// GPUs behind that NIC.
void attach_nic(FabricImpl& impl, int node, int rail, int tor);

// Up to 2^24 GPUs; larger sizes are refused rather than overflowing int ids.
inline constexpr long long kMaxGpus = 1LL << 24;

}  // namespace megasim
