// Router: per-destination switch distances, ECMP hashing, ideal spray, single path.
#include "megasim/net/router.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "megasim/core/rng.hpp"

namespace megasim {

namespace {
constexpr std::uint8_t kUnreachable = 255;
}  // namespace

struct Router::Tables {
  int num_switches = 0;
  BigVector<int> switch_of_vertex;         // -1 for GPUs, NVSwitches and NICs (huge-page backed)
  std::vector<VertexId> vertex_of_switch;
  // Switch-to-switch out links in CSR form (ascending LinkId per switch).
  BigVector<std::size_t> adj_begin;
  BigVector<LinkId> adj_link;
  BigVector<int> adj_nbr;
  std::vector<int> tor_switch;             // ToR index -> switch index
  BigVector<std::uint8_t> dist;            // [dst_tor * num_switches + switch]
  std::vector<std::uint64_t> salt;         // per switch
};

struct Router::Endpoints {
  LinkPath head;   // source GPU up to (and including) its NIC's ToR uplink
  std::array<LinkId, 2> tail{kNoLink, kNoLink};  // ToR -> NIC -> GPU; valid if src_tor >= 0
  int src_tor = -1;  // -1: no switch part (intra-node transfer)
  int dst_tor = -1;
};

Router::Router(const Fabric& fabric, Routing policy, std::uint64_t seed)
    : fabric_(fabric), policy_(policy), seed_(seed) {
  auto t = std::make_shared<Tables>();
  const std::size_t nv = fabric_.num_vertices();
  t->switch_of_vertex.assign(nv, -1);
  for (VertexKind kind : {VertexKind::Tor, VertexKind::Agg, VertexKind::Spine}) {
    for (std::size_t i = 0; i < fabric_.num_vertices_of(kind); ++i) {
      const VertexId v = fabric_.vertex_of(kind, static_cast<int>(i));
      t->switch_of_vertex[v] = static_cast<int>(t->vertex_of_switch.size());
      t->vertex_of_switch.push_back(v);
    }
  }
  const int ns = static_cast<int>(t->vertex_of_switch.size());
  t->num_switches = ns;
  // Switch-to-switch links by source switch, ascending LinkId: a counting sort over the links
  // (the fabric's own out-link lists cover every GPU and NIC too: 5x the links at 98,304 GPUs).
  const auto nsw = static_cast<std::size_t>(ns);
  t->adj_begin.assign(nsw + 1, 0);
  const std::size_t nl = fabric_.num_links();
  const auto switch_pair = [&](LinkId l, int& from, int& to) {
    from = t->switch_of_vertex[fabric_.link_src(l)];
    to = from < 0 ? -1 : t->switch_of_vertex[fabric_.link_dst(l)];
    return to >= 0;
  };
  int from = 0;
  int to = 0;
  for (LinkId l = 0; l < nl; ++l)
    if (switch_pair(l, from, to)) ++t->adj_begin[static_cast<std::size_t>(from) + 1];
  for (std::size_t i = 1; i <= nsw; ++i) t->adj_begin[i] += t->adj_begin[i - 1];
  t->adj_link.resize(t->adj_begin[nsw]);
  t->adj_nbr.resize(t->adj_begin[nsw]);
  std::vector<std::size_t> fill(t->adj_begin.begin(), t->adj_begin.end() - 1);
  for (LinkId l = 0; l < nl; ++l) {
    if (!switch_pair(l, from, to)) continue;
    const std::size_t at = fill[static_cast<std::size_t>(from)]++;
    t->adj_link[at] = l;
    t->adj_nbr[at] = to;
  }
  for (int s = 0; s < ns; ++s) {
    const VertexId v = t->vertex_of_switch[static_cast<std::size_t>(s)];
    t->salt.push_back(stable_hash({seed_, static_cast<std::uint64_t>(v)}));
  }
  const int num_tors = fabric_.num_tors();
  for (int tor = 0; tor < num_tors; ++tor) {
    t->tor_switch.push_back(t->switch_of_vertex[fabric_.vertex_of(VertexKind::Tor, tor)]);
  }
  // Links are full duplex, so the distance *to* a ToR is a BFS from it. ToRs with the same
  // switch neighbours (a pod's leaves, or a rail's) share one BFS: for any other switch s,
  // dist(s, tor) = 1 + min over the ToR's neighbours n of dist(s, n), which is a BFS seeded
  // with every neighbour at distance 1; each ToR then only sets its own entry to 0. At
  // 131,072 GPUs on a radix-128 Clos this is 32 BFS passes instead of 2,048.
  const auto nsu = static_cast<std::size_t>(ns);
  t->dist.assign(static_cast<std::size_t>(num_tors) * nsu, kUnreachable);
  std::map<std::vector<int>, std::vector<int>> tors_by_neighbours;
  for (int tor = 0; tor < num_tors; ++tor) {
    const auto s = static_cast<std::size_t>(t->tor_switch[static_cast<std::size_t>(tor)]);
    std::vector<int> nbrs(t->adj_nbr.begin() + static_cast<std::ptrdiff_t>(t->adj_begin[s]),
                          t->adj_nbr.begin() + static_cast<std::ptrdiff_t>(t->adj_begin[s + 1]));
    std::sort(nbrs.begin(), nbrs.end());
    nbrs.erase(std::unique(nbrs.begin(), nbrs.end()), nbrs.end());
    tors_by_neighbours[std::move(nbrs)].push_back(tor);
  }
  std::vector<std::uint8_t> row(nsu);
  std::vector<int> queue;
  queue.reserve(nsu);
  for (const auto& [nbrs, tors] : tors_by_neighbours) {
    std::fill(row.begin(), row.end(), kUnreachable);
    queue.assign(nbrs.begin(), nbrs.end());
    for (int n : nbrs) row[static_cast<std::size_t>(n)] = 1;
    for (std::size_t head = 0; head < queue.size(); ++head) {
      const int s = queue[head];
      const auto su = static_cast<std::size_t>(s);
      for (std::size_t i = t->adj_begin[su]; i < t->adj_begin[su + 1]; ++i) {
        const auto n = static_cast<std::size_t>(t->adj_nbr[i]);
        if (row[n] != kUnreachable || row[su] + 1 >= kUnreachable) continue;
        row[n] = static_cast<std::uint8_t>(row[su] + 1);
        queue.push_back(t->adj_nbr[i]);
      }
    }
    for (int tor : tors) {
      std::uint8_t* d = t->dist.data() + static_cast<std::size_t>(tor) * nsu;
      std::copy(row.begin(), row.end(), d);
      d[t->tor_switch[static_cast<std::size_t>(tor)]] = 0;
    }
  }
  tables_ = std::move(t);
}

Router::Router(const Router& other, Routing policy)
    : fabric_(other.fabric_), policy_(policy), seed_(other.seed_), tables_(other.tables_) {}

int Router::tor_distance(int src_tor, int dst_tor) const {
  const Tables& t = *tables_;
  const int d = t.dist.at(static_cast<std::size_t>(dst_tor) *
                              static_cast<std::size_t>(t.num_switches) +
                          static_cast<std::size_t>(t.tor_switch.at(static_cast<std::size_t>(src_tor))));
  return d == kUnreachable ? -1 : d;
}

void Router::append_candidates(int sw, int dst_tor, std::vector<LinkId>& out) const {
  const Tables& t = *tables_;
  const std::uint8_t* d =
      t.dist.data() + static_cast<std::size_t>(dst_tor) * static_cast<std::size_t>(t.num_switches);
  const std::uint8_t here = d[sw];
  if (here == 0) return;
  if (here == kUnreachable) throw std::logic_error("Router: destination ToR unreachable");
  for (std::size_t i = t.adj_begin[static_cast<std::size_t>(sw)];
       i < t.adj_begin[static_cast<std::size_t>(sw) + 1]; ++i) {
    if (d[t.adj_nbr[i]] + 1 == here) out.push_back(t.adj_link[i]);
  }
}

std::vector<LinkId> Router::next_hops(VertexId sw, int dst_tor) const {
  std::vector<LinkId> out;
  const int s = tables_->switch_of_vertex.at(sw);
  if (s < 0) throw std::invalid_argument("Router::next_hops: vertex is not a switch");
  append_candidates(s, dst_tor, out);
  return out;
}

Router::Endpoints Router::endpoints(int src, int dst) const {
  Endpoints e;
  e.head.reserve(12);  // room for the whole path: it is extended in place
  const GpuLinks& d = fabric_.gpu_links(dst);
  const int src_node = fabric_.node_of_gpu(src);
  if (fabric_.domain_of_gpu(src) == fabric_.domain_of_gpu(dst)) {
    e.head.push_back(fabric_.gpu_links(src).to_nvswitch);
    e.head.push_back(d.from_nvswitch);
    return e;
  }
  int origin = src;
  if (fabric_.topology() == Topology::RailOnly &&
      fabric_.rail_of_gpu(src) != fabric_.rail_of_gpu(dst)) {
    // No switch joins two rails: hop over NVLink to the local GPU on the destination rail.
    origin = fabric_.gpu_on_rail(src_node, fabric_.rail_of_gpu(dst));
    e.head.push_back(fabric_.gpu_links(src).to_nvswitch);
    e.head.push_back(fabric_.gpu_links(origin).from_nvswitch);
  }
  const GpuLinks& o = fabric_.gpu_links(origin);
  e.head.push_back(o.to_nic);
  e.head.push_back(o.nic_to_tor);
  e.tail = {d.tor_to_nic, d.from_nic};
  e.src_tor = fabric_.tor_of_gpu(origin);
  e.dst_tor = fabric_.tor_of_gpu(dst);
  return e;
}

void Router::hashed_walk(int src_tor, int dst_tor, const std::uint64_t key[3],
                         LinkPath& out) const {
  // Two passes over a switch's links (count, then select) instead of a candidate list:
  // this runs for every transfer of a simulated step, so it allocates nothing.
  const Tables& t = *tables_;
  const std::uint8_t* d =
      t.dist.data() + static_cast<std::size_t>(dst_tor) * static_cast<std::size_t>(t.num_switches);
  int sw = t.tor_switch[static_cast<std::size_t>(src_tor)];
  while (d[sw] != 0) {
    if (d[sw] == kUnreachable) throw std::logic_error("Router: destination ToR unreachable");
    const std::size_t begin = t.adj_begin[static_cast<std::size_t>(sw)];
    const std::size_t end = t.adj_begin[static_cast<std::size_t>(sw) + 1];
    std::uint64_t k = 0;
    for (std::size_t i = begin; i < end; ++i) k += d[t.adj_nbr[i]] + 1 == d[sw];
    std::uint64_t pick = 0;
    if (policy_ == Routing::Ecmp && k > 1) {
      pick = stable_hash({key[0], key[1], key[2], t.salt[static_cast<std::size_t>(sw)]}) % k;
    }
    for (std::size_t i = begin; i < end; ++i) {
      if (d[t.adj_nbr[i]] + 1 != d[sw]) continue;
      if (pick-- == 0) {
        out.push_back(t.adj_link[i]);
        sw = t.adj_nbr[i];
        break;
      }
    }
  }
}

std::vector<WeightedPath> Router::spray_walk(int src_tor, int dst_tor) const {
  const Tables& t = *tables_;
  struct Partial {
    LinkPath links;
    int sw;
    double weight;
  };
  std::vector<Partial> frontier{{{}, t.tor_switch[static_cast<std::size_t>(src_tor)], 1.0}};
  std::vector<Partial> next;
  std::vector<LinkId> cands;
  std::map<int, std::size_t> dealt;  // per switch: paths dealt so far on a down hop
  // Every partial path sits at the same distance from the destination, so layers advance
  // together and all paths arrive at once.
  for (;;) {
    next.clear();
    dealt.clear();
    for (Partial& p : frontier) {
      cands.clear();
      append_candidates(p.sw, dst_tor, cands);
      if (cands.empty()) return std::vector<WeightedPath>();  // unreachable by construction
      const bool up = std::any_of(cands.begin(), cands.end(),
                                  [&](LinkId l) { return fabric_.link_is_up(l); });
      if (up) {
        const double w = p.weight / static_cast<double>(cands.size());
        for (LinkId l : cands) {
          Partial q{p.links, t.switch_of_vertex[fabric_.link_dst(l)], w};
          q.links.push_back(l);
          next.push_back(std::move(q));
        }
      } else {
        const LinkId l = cands[dealt[p.sw]++ % cands.size()];
        p.links.push_back(l);
        p.sw = t.switch_of_vertex[fabric_.link_dst(l)];
        next.push_back(std::move(p));
      }
    }
    frontier.swap(next);
    if (frontier.front().sw == t.tor_switch[static_cast<std::size_t>(dst_tor)]) break;
  }
  std::vector<WeightedPath> out;
  out.reserve(frontier.size());
  for (Partial& p : frontier) out.push_back(WeightedPath{std::move(p.links), p.weight, 0.0});
  return out;
}

double Router::path_latency_s(const LinkPath& links) const {
  double s = 0;
  for (LinkId l : links) s += fabric_.link_latency_s(l);
  return s;
}

std::vector<WeightedPath> Router::paths(int src, int dst, std::uint64_t queue_pair) const {
  if (src < 0 || dst < 0 || src >= fabric_.num_gpus() || dst >= fabric_.num_gpus()) {
    throw std::out_of_range("Router::paths: GPU id out of range");
  }
  if (src == dst) return {WeightedPath{}};
  Endpoints e = endpoints(src, dst);
  std::vector<WeightedPath> out;
  if (e.src_tor < 0) {
    out.push_back(WeightedPath{std::move(e.head), 1.0, 0.0});
  } else if (e.src_tor == e.dst_tor) {
    out.push_back(WeightedPath{std::move(e.head), 1.0, 0.0});
    out.back().links.insert(out.back().links.end(), e.tail.begin(), e.tail.end());
  } else if (policy_ == Routing::IdealSpray) {
    out = spray_walk(e.src_tor, e.dst_tor);
    for (WeightedPath& p : out) {
      LinkPath full = e.head;
      full.insert(full.end(), p.links.begin(), p.links.end());
      full.insert(full.end(), e.tail.begin(), e.tail.end());
      p.links = std::move(full);
    }
  } else {
    const std::uint64_t key[3] = {static_cast<std::uint64_t>(src), static_cast<std::uint64_t>(dst),
                                  queue_pair};
    out.push_back(WeightedPath{std::move(e.head), 1.0, 0.0});
    LinkPath& links = out.back().links;
    hashed_walk(e.src_tor, e.dst_tor, key, links);
    links.insert(links.end(), e.tail.begin(), e.tail.end());
  }
  for (WeightedPath& p : out) p.latency_s = path_latency_s(p.links);
  return out;
}

bool Router::direct_path(int src, int dst, std::array<LinkId, 4>& out, int& length) const {
  if (src == dst) return false;
  const GpuLinks& s = fabric_.gpu_links(src);
  const GpuLinks& d = fabric_.gpu_links(dst);
  if (fabric_.domain_of_gpu(src) == fabric_.domain_of_gpu(dst)) {
    out = {s.to_nvswitch, d.from_nvswitch, kNoLink, kNoLink};
    length = 2;
    return true;
  }
  if (fabric_.topology() == Topology::RailOnly && fabric_.rail_of_gpu(src) != fabric_.rail_of_gpu(dst)) return false;
  const int tor = fabric_.tor_of_gpu(src);
  if (tor < 0 || tor != fabric_.tor_of_gpu(dst)) return false;
  out = {s.to_nic, s.nic_to_tor, d.tor_to_nic, d.from_nic};
  length = 4;
  return true;
}

namespace {

// Sorts (key, value) pairs by key, keeping equal keys in the order they were added, and sums
// each key's values in that order: what accumulating into a std::map gives, without a node per
// key (a spray over a radix-128 three-tier Clos adds thousands of shares per ToR pair).
template <class Key>
void merge_sums(std::vector<std::pair<Key, double>>& v) {
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::size_t out = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (out > 0 && v[out - 1].first == v[i].first) {
      v[out - 1].second += v[i].second;
    } else {
      v[out++] = {v[i].first, 0.0 + v[i].second};
    }
  }
  v.resize(out);
}

}  // namespace

std::vector<LinkShare> Router::link_shares(int src, int dst, std::uint64_t queue_pair) const {
  std::vector<std::pair<LinkId, double>> share;
  if (policy_ == Routing::IdealSpray && src != dst) {
    Endpoints e = endpoints(src, dst);
    for (LinkId l : e.head) share.emplace_back(l, 1.0);
    if (e.src_tor >= 0) {
      for (LinkId l : e.tail) share.emplace_back(l, 1.0);
    }
    if (e.src_tor >= 0 && e.src_tor != e.dst_tor) {
      // Exact per-hop even split, layer by layer.
      // The next layer's fractions per switch, summed in the order they arrive (as a map
      // would), the layer then walked in ascending switch order.
      std::vector<std::pair<int, double>> layer{{tables_->tor_switch[static_cast<std::size_t>(e.src_tor)], 1.0}};
      std::vector<double> next_frac(static_cast<std::size_t>(tables_->num_switches), 0.0);
      std::vector<int> next;
      std::vector<LinkId> cands;
      while (true) {
        next.clear();
        for (const auto& [sw, frac] : layer) {
          cands.clear();
          append_candidates(sw, e.dst_tor, cands);
          for (LinkId l : cands) {
            const double f = frac / static_cast<double>(cands.size());
            share.emplace_back(l, f);
            const int to = tables_->switch_of_vertex[fabric_.link_dst(l)];
            double& acc = next_frac[static_cast<std::size_t>(to)];
            if (acc == 0.0) next.push_back(to);
            acc += f;
          }
        }
        if (next.empty()) break;
        std::sort(next.begin(), next.end());
        layer.clear();
        for (const int sw : next) {
          layer.emplace_back(sw, next_frac[static_cast<std::size_t>(sw)]);
          next_frac[static_cast<std::size_t>(sw)] = 0.0;
        }
      }
    }
  } else {
    for (const WeightedPath& p : paths(src, dst, queue_pair)) {
      for (LinkId l : p.links) share.emplace_back(l, p.weight);
    }
  }
  merge_sums(share);
  std::vector<LinkShare> out;
  out.reserve(share.size());
  for (const auto& [l, f] : share) out.push_back(LinkShare{l, f});
  return out;
}

}  // namespace megasim
