#pragma once
// nccl-tests-style sweeps behind `megasim collective`: one collective over the first N GPUs
// of a cluster at sizes doubling from A to B, timed by the analytic model or the flow
// simulation; and the ECMP collision report of one collective (time inflation over seeds
// against ideal spraying, per-tier uplink flow counts).
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "megasim/coll/lowering.hpp"
#include "megasim/coll/nccl_model.hpp"
#include "megasim/config/specs.hpp"
#include "megasim/net/ecmp_stats.hpp"

namespace megasim {

enum class CollEngine { Analytic, Des };
const char* to_string(CollEngine e);
CollEngine parse_coll_engine(std::string_view text, const std::string& path);

struct CollectiveSweepOptions {
  CollOp op = CollOp::AllReduce;
  int gpus = 8;                  // the first N GPUs of the cluster, in id order
  double min_bytes = 1024;
  double max_bytes = 8.0 * 1024 * 1024 * 1024;
  CollAlgo algo = CollAlgo::Auto;
  CollEngine engine = CollEngine::Des;
  int scatter_gather = 1;        // send/recv only
};

struct CollectiveRow {
  double size_bytes = 0;
  double time_s = 0;
  double algbw_GBps = 0;         // size / time
  double busbw_GBps = 0;         // algbw x busbw_factor(op, gpus)
  CollAlgo algo = CollAlgo::Ring;      // chosen by the NCCL model
  NcclProto proto = NcclProto::Simple;
};

// "1KiB:8GiB" -> (1024, 8 GiB); a single size "1MiB" gives (1 MiB, 1 MiB).
// Throws InputError(path, ...) on malformed text, sizes <= 0 or A > B.
std::pair<double, double> parse_size_range(std::string_view text, const std::string& path);

// The request a sweep runs at one size (first N GPUs; send/recv: GPU 0 -> GPU N-1).
CollectiveRequest sweep_request(const CollectiveSweepOptions& opt, double size_bytes);

// Throws InputError("--gpus", ...) when N is outside [1, cluster.num_gpus] (or < 2 for
// send_recv), InputError("--sizes", ...) for a bad range.
std::vector<CollectiveRow> run_collective_sweep(const ClusterSpec& cluster, const NcclModel& model,
                                                const CollectiveSweepOptions& opt);

struct EcmpReport {
  double size_bytes = 0;
  double ideal_time_s = 0;              // ideal-spray routing
  std::vector<double> inflation;        // ECMP time / ideal time, seeds 1..N
  double p50_inflation = 0;
  double p99_inflation = 0;
  EcmpStats uplinks;                    // per-uplink flow counts under the cluster's ECMP seed
  std::size_t network_flows = 0;        // inter-node flows counted in `uplinks`
};

// Simulates the collective at `size_bytes` once with ideal spraying and once per ECMP seed
// 1..seeds (seeds >= 1, else InputError("--ecmp-seeds")).
EcmpReport collective_ecmp_report(const ClusterSpec& cluster, const NcclModel& model,
                                  const CollectiveSweepOptions& opt, double size_bytes, int seeds);

}  // namespace megasim
