#pragma once
// Routing of GPU-to-GPU transfers over a Fabric.
//
//  * Intra-node: GPU -> NVSwitch -> GPU.
//  * Inter-node: GPU -> NIC -> ToR -> ... -> ToR -> NIC -> GPU along shortest switch paths
//    (in the builders' Clos fabrics these are exactly the up-down paths).
//  * Rail-only fabrics have no switch joining two rails: a cross-rail transfer first crosses
//    NVLink to the source node's GPU on the destination's rail, then that rail's network.
//
// Policies at a switch with k equal-cost next-hop links (parallel links count separately,
// as ECMP hashes over egress ports):
//  * Ecmp: link number stable_hash({src, dst, queue_pair, salt}) mod k, salt =
//    stable_hash({seed, switch vertex id}); one path of weight 1.
//  * IdealSpray: the flow is split evenly over the next hops at every switch (the
//    adaptive-routing / packet-spray baseline). paths() returns equal-weight paths whose
//    per-link weight sums equal that split exactly in the builders' symmetric fabrics
//    (branch on every up hop, deal paths round-robin on down hops).
//  * SinglePath: the lowest-numbered next hop everywhere; one deterministic path.
//
// A Router is immutable after construction and safe to share between threads.
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "megasim/config/specs.hpp"
#include "megasim/net/fabric.hpp"
#include "megasim/net/link.hpp"

namespace megasim {

struct WeightedPath {
  LinkPath links;
  double weight = 1.0;     // fraction of the transfer on this path; a flow's weights sum to 1
  double latency_s = 0.0;  // sum of the links' latencies
};

struct LinkShare {
  LinkId link = kNoLink;
  double fraction = 0.0;   // fraction of the transfer crossing this link direction
};

class Router {
 public:
  // Precomputes per-destination-ToR switch distances (BFS over switch links). Keeps a copy
  // of the (shared, immutable) fabric.
  Router(const Fabric& fabric, Routing policy, std::uint64_t seed);
  // The same fabric and seed under another policy, sharing `other`'s tables (they depend on
  // the fabric and seed only): at 100,000 GPUs building them is tens of milliseconds.
  Router(const Router& other, Routing policy);

  const Fabric& fabric() const { return fabric_; }
  Routing policy() const { return policy_; }
  std::uint64_t seed() const { return seed_; }

  // Paths of a transfer; src == dst gives one empty path. Throws std::out_of_range on bad ids.
  std::vector<WeightedPath> paths(int src_gpu, int dst_gpu, std::uint64_t queue_pair) const;

  // The switch-free route of a transfer when it has one, written to `out` with its length:
  // inside one NVLink domain GPU -> NVSwitch -> GPU (2 links), under one ToR GPU -> NIC ->
  // ToR -> NIC -> GPU (4 links), exactly as paths() routes them. False when the route crosses
  // a switch-to-switch link or relays through another GPU (rail-only). Allocates nothing:
  // for callers that classify millions of transfers.
  bool direct_path(int src_gpu, int dst_gpu, std::array<LinkId, 4>& out, int& length) const;

  // Per-link fractions of a transfer, ascending LinkId (IdealSpray: exact per-hop split).
  std::vector<LinkShare> link_shares(int src_gpu, int dst_gpu, std::uint64_t queue_pair) const;

  // Equal-cost next-hop links at switch vertex `sw` toward ToR `dst_tor`, ascending LinkId;
  // empty at the destination ToR itself.
  std::vector<LinkId> next_hops(VertexId sw, int dst_tor) const;

  // Switch hops between two ToRs (0 for the same ToR, 2 via one tier-2 switch, ...).
  int tor_distance(int src_tor, int dst_tor) const;

 private:
  struct Tables;
  struct Endpoints;

  Endpoints endpoints(int src_gpu, int dst_gpu) const;
  void hashed_walk(int src_tor, int dst_tor, const std::uint64_t key[3], LinkPath& out) const;
  std::vector<WeightedPath> spray_walk(int src_tor, int dst_tor) const;
  void append_candidates(int sw, int dst_tor, std::vector<LinkId>& out) const;
  double path_latency_s(const LinkPath& links) const;

  Fabric fabric_;
  Routing policy_;
  std::uint64_t seed_;
  std::shared_ptr<const Tables> tables_;
};

}  // namespace megasim
