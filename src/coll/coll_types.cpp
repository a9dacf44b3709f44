// Names and parsing for the collective vocabulary, and nccl-tests' bus-bandwidth factors.
#include "megasim/coll/coll_types.hpp"

#include <array>
#include <utility>

#include "megasim/core/error.hpp"

namespace megasim {

const char* to_string(CollOp op) {
  switch (op) {
    case CollOp::AllReduce: return "all_reduce";
    case CollOp::AllGather: return "all_gather";
    case CollOp::ReduceScatter: return "reduce_scatter";
    case CollOp::AllToAll: return "all_to_all";
    case CollOp::SendRecv: return "send_recv";
  }
  return "?";
}

const char* to_string(CollAlgo algo) {
  switch (algo) {
    case CollAlgo::Auto: return "auto";
    case CollAlgo::Ring: return "ring";
    case CollAlgo::Tree: return "tree";
    case CollAlgo::Hierarchical: return "hierarchical";
  }
  return "?";
}

const char* to_string(NcclProto proto) {
  switch (proto) {
    case NcclProto::LL: return "LL";
    case NcclProto::LL128: return "LL128";
    case NcclProto::Simple: return "Simple";
  }
  return "?";
}

CollOp parse_coll_op(std::string_view text, const std::string& path) {
  static constexpr std::array<std::pair<std::string_view, CollOp>, 5> kNames{{
      {"all_reduce", CollOp::AllReduce},
      {"all_gather", CollOp::AllGather},
      {"reduce_scatter", CollOp::ReduceScatter},
      {"all_to_all", CollOp::AllToAll},
      {"send_recv", CollOp::SendRecv},
  }};
  for (const auto& [name, op] : kNames)
    if (name == text) return op;
  throw InputError(path, "must be one of all_reduce, all_gather, reduce_scatter, all_to_all, "
                         "send_recv (got '" + std::string(text) + "')");
}

CollAlgo parse_coll_algo(std::string_view text, const std::string& path) {
  static constexpr std::array<std::pair<std::string_view, CollAlgo>, 4> kNames{{
      {"auto", CollAlgo::Auto},
      {"ring", CollAlgo::Ring},
      {"tree", CollAlgo::Tree},
      {"hierarchical", CollAlgo::Hierarchical},
  }};
  for (const auto& [name, algo] : kNames)
    if (name == text) return algo;
  throw InputError(path, "must be one of auto, ring, tree, hierarchical (got '" +
                             std::string(text) + "')");
}

double busbw_factor(CollOp op, int n) {
  if (n <= 1) return op == CollOp::SendRecv ? 1.0 : 0.0;
  const double nd = static_cast<double>(n);
  switch (op) {
    case CollOp::AllReduce: return 2.0 * (nd - 1.0) / nd;
    case CollOp::AllGather:
    case CollOp::ReduceScatter:
    case CollOp::AllToAll: return (nd - 1.0) / nd;
    case CollOp::SendRecv: return 1.0;
  }
  return 1.0;
}

}  // namespace megasim
