#pragma once
// Builders of the cluster fabric, one per ClusterSpec::network.topology.
//
// Common to all: one NVSwitch crossbar per node (non-blocking; each GPU's NVLink port at
// gpu.nvlink_bandwidth per direction), one NIC per rail per node (GPU<->NIC over PCIe at
// pcie_bandwidth, or at the NIC rate when PCIe is unset), NIC<->ToR at nic_bandwidth.
// ToR ports split down:up by the oversubscription ratio (64 ports at 1:1 -> 32 down, 32 up);
// with split_port each down port carries two NIC links (a 400G port as 2 x 200G).
//
//  * RailOptimizedClos (MegaScale §3.6): NIC r of every server under ToR set t connects to
//    ToR (t, r). A pod is as many whole ToR sets as an aggregation switch's 32 down ports
//    allow; every ToR of a pod connects to every aggregation switch of the pod (cross-rail
//    traffic goes through aggregation). Spines only when there is more than one pod; agg j of
//    every pod connects to the spines of plane j.
//  * FatTree: two-tier leaf-spine; all NICs of a server go to the same leaf.
//  * RailOnly: rail ToRs plus per-rail spines; no switch connects two rails, so cross-rail
//    traffic first crosses NVLink to the GPU on the destination rail (router.hpp).
//
// Switch counts are rounded up so that uplinks spread evenly: a tier-2 switch count is the
// smallest divisor of the uplink count that provides enough ports, and the remainder are
// parallel links (each a separate ECMP member). Capacity limits throw InputError.
#include "megasim/config/specs.hpp"
#include "megasim/net/fabric.hpp"

namespace megasim {

// Dispatches on cluster.network.topology. Throws InputError for inconsistent sizes.
Fabric build_fabric(const ClusterSpec& cluster);

Fabric build_rail_optimized_clos(const ClusterSpec& cluster);
Fabric build_fat_tree(const ClusterSpec& cluster);
Fabric build_rail_only(const ClusterSpec& cluster);

// Smallest divisor of n that is >= at_least (n itself when none smaller fits); n >= 1.
int smallest_divisor_at_least(int n, int at_least);

}  // namespace megasim
