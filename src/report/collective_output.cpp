#include "megasim/report/collective_output.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "megasim/core/units.hpp"
#include "megasim/core/version.hpp"

namespace megasim {

namespace {

nlohmann::json ecmp_json(const EcmpReport& r) {
  nlohmann::json tiers = nlohmann::json::array();
  for (const auto& t : r.uplinks.tiers)
    tiers.push_back({{"kind", to_string(t.kind)}, {"links", t.num_links}, {"mean_flows", t.mean_load},
                     {"max_flows", t.max_load}, {"p99_flows", t.p99_load}, {"idle_fraction", t.idle_fraction},
                     {"expected_max_flows", t.expected_max_load}, {"spray_max_flows", t.spray_max_load}});
  return {{"size_bytes", r.size_bytes}, {"ideal_time_s", r.ideal_time_s}, {"inflation", r.inflation},
          {"p50_inflation", r.p50_inflation}, {"p99_inflation", r.p99_inflation},
          {"network_flows", r.network_flows}, {"uplink_tiers", tiers}};
}

void write_ecmp_text(const EcmpReport& r, std::ostream& out) {
  out << fmt::format("# ECMP report at {}: ideal-spray time {}, inflation over {} seeds p50 {:.3f} p99 {:.3f}\n",
                     format_bytes(r.size_bytes), format_time(r.ideal_time_s), r.inflation.size(), r.p50_inflation,
                     r.p99_inflation);
  out << "# " << r.network_flows << " inter-node flows; per-uplink flow counts (cluster seed):\n";
  for (const auto& t : r.uplinks.tiers) {
    out << fmt::format("#   {}: {} links, mean {:.2f}, max {:.0f} (balls-into-bins {:.2f}, spray {:.2f}), idle {:.1f}%\n",
                       to_string(t.kind), t.num_links, t.mean_load, t.max_load, t.expected_max_load, t.spray_max_load,
                       100 * t.idle_fraction);
  }
}

}  // namespace

std::string collective_output_json(const CollectiveOutput& c) {
  const CollectiveSweepOptions& opt = c.options;
  nlohmann::json j{{"schema_version", kSchemaVersion}, {"op", to_string(opt.op)},     {"gpus", opt.gpus},
                   {"algo", to_string(opt.algo)},       {"engine", to_string(opt.engine)}, {"rows", nlohmann::json::array()}};
  for (const auto& r : c.rows)
    j["rows"].push_back({{"size_bytes", r.size_bytes}, {"time_s", r.time_s}, {"algbw_GBps", r.algbw_GBps},
                         {"busbw_GBps", r.busbw_GBps}, {"chosen_algo", to_string(r.algo)},
                         {"protocol", to_string(r.proto)}});
  if (c.ecmp != nullptr) j["ecmp_report"] = ecmp_json(*c.ecmp);
  return j.dump(2);
}

void write_collective_table(const CollectiveOutput& c, std::ostream& out) {
  const CollectiveSweepOptions& opt = c.options;
  out << fmt::format("# megasim collective: {} over {} GPUs of {}, algo {}, engine {}, NCCL model {}\n",
                     to_string(opt.op), opt.gpus, c.cluster_name, to_string(opt.algo), to_string(opt.engine),
                     c.nccl_model_name);
  out << fmt::format("#{:>14}{:>14}{:>13}{:>13}{:>8}{:>8}\n", "size(B)", "time(us)", "algbw(GB/s)", "busbw(GB/s)",
                     "algo", "proto");
  for (const auto& r : c.rows) {
    out << fmt::format(" {:>14.0f}{:>14.2f}{:>13.2f}{:>13.2f}{:>8}{:>8}\n", r.size_bytes, r.time_s * 1e6,
                       r.algbw_GBps, r.busbw_GBps, to_string(r.algo), to_string(r.proto));
  }
  if (c.ecmp != nullptr) write_ecmp_text(*c.ecmp, out);
}

}  // namespace megasim
