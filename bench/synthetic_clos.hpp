#pragma once
// A synthetic 12,288-GPU rail-optimised Clos for the benchmarks only (the real fabric comes
// from net/topo): 1536 nodes x 8 NICs of 200 Gbps; per rail 24 ToRs of 64 nodes each
// (192 ToRs); each ToR has one 400 Gbps uplink to each of 32 spines of its rail plane.
// Link ids: NIC up/down directions first, then ToR->spine / spine->ToR directions.
#include <cstdint>
#include <vector>

#include "megasim/core/rng.hpp"
#include "megasim/net/link.hpp"

namespace megasim::bench {

struct SyntheticClos {
  static constexpr std::uint32_t kNodes = 1536;
  static constexpr std::uint32_t kRails = 8;
  static constexpr std::uint32_t kNodesPerTor = 64;
  static constexpr std::uint32_t kTorsPerRail = kNodes / kNodesPerTor;  // 24
  static constexpr std::uint32_t kSpinesPerRail = 32;
  static constexpr double kNicBps = 200e9 / 8;    // 200 Gbps NIC
  static constexpr double kUplinkBps = 400e9 / 8; // 400 Gbps switch port
  static constexpr LinkId kNicLinks = kNodes * kRails * 2;

  static LinkId nic_up(std::uint32_t node, std::uint32_t rail) { return (node * kRails + rail) * 2; }
  static LinkId nic_down(std::uint32_t node, std::uint32_t rail) { return nic_up(node, rail) + 1; }
  static std::uint32_t tor(std::uint32_t node, std::uint32_t rail) {
    return rail * kTorsPerRail + node / kNodesPerTor;
  }
  static LinkId tor_up(std::uint32_t tor_id, std::uint32_t spine) {
    return kNicLinks + (tor_id * kSpinesPerRail + spine) * 2;
  }
  static LinkId tor_down(std::uint32_t tor_id, std::uint32_t spine) { return tor_up(tor_id, spine) + 1; }

  static std::vector<double> capacities() {
    std::vector<double> caps(kNicLinks, kNicBps);
    caps.resize(kNicLinks + kRails * kTorsPerRail * kSpinesPerRail * 2, kUplinkBps);
    return caps;
  }

  // Same-rail path; `ecmp_key` picks the spine when the nodes sit under different ToRs.
  static LinkPath path(std::uint32_t src, std::uint32_t dst, std::uint32_t rail,
                       std::uint64_t ecmp_key) {
    LinkPath p{nic_up(src, rail)};
    const std::uint32_t t1 = tor(src, rail);
    const std::uint32_t t2 = tor(dst, rail);
    if (t1 != t2) {
      const auto spine = static_cast<std::uint32_t>(mix64(ecmp_key) % kSpinesPerRail);
      p.push_back(tor_up(t1, spine));
      p.push_back(tor_down(t2, spine));
    }
    p.push_back(nic_down(dst, rail));
    return p;
  }

  static LinkPath random_path(Rng& rng) {
    const auto src = static_cast<std::uint32_t>(rng.below(kNodes));
    auto dst = static_cast<std::uint32_t>(rng.below(kNodes - 1));
    if (dst >= src) ++dst;
    return path(src, dst, static_cast<std::uint32_t>(rng.below(kRails)), rng.next_u64());
  }
};

}  // namespace megasim::bench
