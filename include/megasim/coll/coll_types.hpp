#pragma once
// Vocabulary of the collective model: operations, algorithms, protocols and the shape of a
// communicator as NCCL's tuner sees it (ranks, ranks per node, nodes).
#include <string>
#include <string_view>

namespace megasim {

enum class CollOp { AllReduce, AllGather, ReduceScatter, AllToAll, SendRecv };
// Auto = pick the algorithm NCCL's tuner would (minimum predicted time).
// Hierarchical = explicit 2-level all-reduce: NVLink reduce-scatter, one ring per rail
// across nodes, NVLink all-gather (simulated collectives only; the analytic model treats it
// as the node-spanning ring, which NCCL's rail-mapped rings already are).
enum class CollAlgo { Auto, Ring, Tree, Hierarchical };
enum class NcclProto { LL, LL128, Simple };

inline constexpr int kNumProtos = 3;

// Communicator shape. ranks == ranks_per_node * nodes (validated by the cost model). A "node"
// here is an NVLink domain (cluster.nvlink_domain_size GPUs: one NVSwitch host on DGX/HGX, a
// whole NVL72 rack on GB200): inside it ranks talk over NVLink, across domains over the hosts'
// NICs. same_rail: one GPU per node, all on the same rail (DP/PP groups under TP = 8), so the
// ring stays inside one rail's switches.
struct CollGroupShape {
  int ranks = 1;
  int ranks_per_node = 1;
  int nodes = 1;
  bool same_rail = true;
};

const char* to_string(CollOp op);
const char* to_string(CollAlgo algo);
const char* to_string(NcclProto proto);
// Parse CLI / config spellings ("all_reduce", "ring", ...); `path` names the flag or field.
CollOp parse_coll_op(std::string_view text, const std::string& path);
CollAlgo parse_coll_algo(std::string_view text, const std::string& path);

// nccl-tests PERFORMANCE.md: busbw = algbw * factor.
//   all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n; send/recv 1.
double busbw_factor(CollOp op, int n);

}  // namespace megasim
