// nccl-tests-style sweeps and the ECMP collision report (see sweep.hpp).
#include "megasim/coll/sweep.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "megasim/coll/runner.hpp"
#include "megasim/core/error.hpp"
#include "megasim/core/units.hpp"
#include "megasim/net/topology_builders.hpp"

namespace megasim {
namespace {

void validate(const ClusterSpec& c, const CollectiveSweepOptions& opt) {
  if (opt.gpus < 1 || opt.gpus > c.num_gpus)
    throw InputError("--gpus", "must be between 1 and the cluster's " + std::to_string(c.num_gpus) +
                                   " GPUs (got " + std::to_string(opt.gpus) + ")");
  if (opt.op == CollOp::SendRecv && opt.gpus < 2)
    throw InputError("--gpus", "send_recv needs at least 2 GPUs (GPU 0 sends to GPU N-1)");
  if (!(opt.min_bytes > 0) || !(opt.max_bytes >= opt.min_bytes))
    throw InputError("--sizes", "need 0 < A <= B");
  if (opt.scatter_gather < 1) throw InputError("--scatter-gather", "must be >= 1");
}

std::vector<double> sizes(const CollectiveSweepOptions& opt) {
  std::vector<double> out;
  for (double s = opt.min_bytes; s <= opt.max_bytes * (1 + 1e-12); s *= 2) out.push_back(std::round(s));
  return out;
}

// Simulated time of one collective alone on the fabric under `router`.
double simulate_once(const Fabric& fabric, const Router& router, const NcclModel& m, const CollectivePlan& plan) {
  Engine engine;
  FlowNetwork net(engine, fabric.link_capacity_Bps());
  CollectiveRunner runner(engine, net, router, fabric, m);
  runner.enable_isolated_edges([](int) { return false; });  // the collective is alone on the fabric
  double done = -1;
  runner.start(plan, "collective", [&] { done = engine.now().seconds(); });
  engine.run();
  engine.require_all_finished();
  spdlog::debug("collective: {} flows simulated, {} evaluated in isolation, {} max-min solves re-solving {} flows",
                runner.flows_simulated(), runner.flows_evaluated_in_isolation(), net.solver().solves(),
                net.solver().flows_resolved());
  return done;
}

double nearest_rank(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

}  // namespace

const char* to_string(CollEngine e) { return e == CollEngine::Analytic ? "analytic" : "des"; }

CollEngine parse_coll_engine(std::string_view text, const std::string& path) {
  if (text == "analytic") return CollEngine::Analytic;
  if (text == "des") return CollEngine::Des;
  throw InputError(path, "must be des or analytic (got '" + std::string(text) + "')");
}

std::pair<double, double> parse_size_range(std::string_view text, const std::string& path) {
  const auto colon = text.find(':');
  const double a = parse_bytes(text.substr(0, colon), path);
  const double b = colon == std::string_view::npos ? a : parse_bytes(text.substr(colon + 1), path);
  if (!(a > 0) || !(b >= a)) throw InputError(path, "need sizes 0 < A <= B in A:B");
  return {a, b};
}

CollectiveRequest sweep_request(const CollectiveSweepOptions& opt, double size_bytes) {
  CollectiveRequest req;
  req.op = opt.op;
  req.algo = opt.algo;
  req.size_bytes = size_bytes;
  for (int g = 0; g < opt.gpus; ++g) req.gpus.push_back(g);
  req.tag = std::string(to_string(opt.op));
  req.scatter_gather = opt.scatter_gather;
  return req;
}

std::vector<CollectiveRow> run_collective_sweep(const ClusterSpec& c, const NcclModel& m,
                                                const CollectiveSweepOptions& opt) {
  validate(c, opt);
  std::vector<CollectiveRow> rows;
  std::optional<Fabric> fabric;
  std::optional<Router> router;
  if (opt.engine == CollEngine::Des) {
    fabric.emplace(build_fabric(c));
    router.emplace(*fabric, c.network.routing, c.network.ecmp_seed);
  }
  const int n = opt.op == CollOp::SendRecv ? 2 : opt.gpus;
  for (double s : sizes(opt)) {
    const CollectiveRequest req = sweep_request(opt, s);
    CollectiveRow row;
    row.size_bytes = s;
    if (opt.engine == CollEngine::Analytic) {
      const CollEstimate e = estimate_request(req, c, m);
      row.time_s = e.time_s;
      row.algo = e.algo;
      row.proto = e.proto;
    } else {
      const CollectivePlan plan = lower_collective(req, c, m);
      row.time_s = simulate_once(*fabric, *router, m, plan);
      row.algo = plan.lowered_as;
      row.proto = plan.estimate.proto;
    }
    row.algbw_GBps = row.time_s > 0 ? s / row.time_s / 1e9 : 0.0;
    row.busbw_GBps = row.algbw_GBps * busbw_factor(opt.op, n);
    rows.push_back(row);
  }
  return rows;
}

EcmpReport collective_ecmp_report(const ClusterSpec& c, const NcclModel& m, const CollectiveSweepOptions& opt,
                                  double size_bytes, int seeds) {
  validate(c, opt);
  if (seeds < 1) throw InputError("--ecmp-seeds", "must be >= 1");
  if (!(size_bytes > 0)) throw InputError("--sizes", "must be > 0");
  const Fabric fabric = build_fabric(c);
  const CollectivePlan plan = lower_collective(sweep_request(opt, size_bytes), c, m);
  EcmpReport rep;
  rep.size_bytes = size_bytes;
  rep.ideal_time_s = simulate_once(fabric, Router(fabric, Routing::IdealSpray, 0), m, plan);
  for (int s = 1; s <= seeds; ++s) {
    const Router ecmp(fabric, Routing::Ecmp, static_cast<std::uint64_t>(s));
    rep.inflation.push_back(simulate_once(fabric, ecmp, m, plan) / rep.ideal_time_s);
  }
  rep.p50_inflation = nearest_rank(rep.inflation, 0.50);
  rep.p99_inflation = nearest_rank(rep.inflation, 0.99);
  std::vector<FlowKey> keys;
  const int domain = nvlink_domain_gpus(c);
  for (const CollPhase& ph : plan.phases)
    for (const FlowStep& f : ph.flows)
      if (f.src_gpu / domain != f.dst_gpu / domain)
        for (int k = 0; k < f.multiplicity; ++k) keys.push_back({f.src_gpu, f.dst_gpu, f.queue_pair});
  rep.network_flows = keys.size();
  rep.uplinks = ecmp_collision_stats(Router(fabric, Routing::Ecmp, c.network.ecmp_seed), keys);
  return rep;
}

}  // namespace megasim
