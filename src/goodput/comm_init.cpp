#include "megasim/goodput/comm_init.hpp"

#include <algorithm>
#include <string>

#include "megasim/config/specs.hpp"
#include "megasim/core/error.hpp"

namespace megasim {

std::vector<CommGroupKind> megatron_comm_groups(std::int64_t num_gpus, int tp, int pp, int cp) {
  if (num_gpus <= 0) throw InputError("cluster.num_gpus", "must be > 0");
  if (tp <= 0 || pp <= 0 || cp <= 0) {
    throw InputError("parallel", "tensor, pipeline and context parallel sizes must be > 0");
  }
  const std::int64_t model = static_cast<std::int64_t>(tp) * pp * cp;
  if (num_gpus % model != 0) {
    throw InputError("cluster.num_gpus", "must be a multiple of TP*PP*CP = " + std::to_string(model));
  }
  const std::int64_t dp = num_gpus / model;
  std::vector<CommGroupKind> g;
  // Each kind partitions all ranks, so count = num_gpus / size.
  g.push_back({"dp", num_gpus / dp, dp});
  g.push_back({"dp-gloo", num_gpus / dp, dp});  // Megatron's gloo twin of every DP group
  g.push_back({"tp", num_gpus / tp, tp});
  g.push_back({"pp", num_gpus / pp, pp});
  g.push_back({"mp", num_gpus / (static_cast<std::int64_t>(tp) * pp), static_cast<std::int64_t>(tp) * pp});
  // Embedding and position-embedding groups: one per pipeline. Megatron loops over every
  // pipeline group to create them, so their count is num_gpus / pp.
  g.push_back({"embedding", num_gpus / pp, pp > 1 ? 2 : 1});
  g.push_back({"position-embedding", num_gpus / pp, 1});
  if (cp > 1) {
    g.push_back({"cp", num_gpus / cp, cp});
    g.push_back({"dp-cp", num_gpus / (dp * cp), dp * cp});
  }
  return g;
}

namespace {

bool is_gloo(const CommGroupKind& kind) { return kind.name.size() > 5 && kind.name.compare(kind.name.size() - 5, 5, "-gloo") == 0; }

// Today's PyTorch (comm_init.hpp): rendezvous, NCCL unique ids and gloo meshes through the one
// store, then each rank's own communicators in turn.
CommInitResult lazy_comm_init(const CommInitInput& in, const CommInitConstants& k) {
  CommInitResult r;
  const double n = static_cast<double>(in.num_gpus);
  r.rendezvous_s = n * k.store_connect_s;
  int own_communicators = in.num_gpus > 1 ? 1 : 0;  // the world communicator of the first barrier
  r.store_ops = n;                                   // its unique id: one set, n - 1 gets
  for (const auto& kind : in.groups) {
    if (kind.count <= 0 || kind.size <= 1) continue;
    const double groups = static_cast<double>(kind.count);
    const double size = static_cast<double>(kind.size);
    if (is_gloo(kind)) {
      r.store_ops += groups * size * size;  // each member: its address, then every other's
    } else {
      r.store_ops += groups * size;
      ++own_communicators;
    }
  }
  r.store_s = in.store == CommInitStore::TcpStore ? r.store_ops * k.tcpstore_op_s : r.store_ops / k.redis_ops_per_s;
  r.group_fixed_s = own_communicators * k.group_fixed_s;
  r.total_s = r.rendezvous_s + r.store_s + r.group_fixed_s;
  return r;
}

}  // namespace

CommInitResult model_comm_init(const CommInitInput& in, const CommInitConstants& k) {
  if (in.num_gpus <= 0) throw InputError("cluster.num_gpus", "must be > 0");
  if (in.lazy) return lazy_comm_init(in, k);
  CommInitResult r;
  std::int64_t group_creations = 0;  // serialised group-creation rounds
  for (const auto& kind : in.groups) {
    if (kind.count <= 0 || kind.size <= 0) continue;
    if (in.ordered) {
      // Disjoint groups of one kind are created concurrently, then one global barrier.
      group_creations += 1;
      r.barriers += 1;
    } else {
      // Every rank calls new_group for every group in turn, each followed by a global barrier.
      group_creations += kind.count;
      r.barriers += kind.count;
    }
  }
  const double n = static_cast<double>(in.num_gpus);
  r.store_ops = static_cast<double>(r.barriers) * n * k.store_ops_per_rank_per_barrier;
  if (in.store == CommInitStore::TcpStore) {
    r.store_s = r.store_ops * k.tcpstore_op_s;  // one blocking thread: ops served one by one
  } else {
    r.store_s = r.store_ops / k.redis_ops_per_s;  // concurrent, bounded by request throughput
  }
  r.group_fixed_s = static_cast<double>(group_creations) * k.group_fixed_s;
  r.total_s = r.store_s + r.group_fixed_s;
  return r;
}

std::vector<CommGroupKind> job_comm_groups(const JobSpec& job) {
  const std::int64_t n = job.cluster.num_gpus;
  const int tp = job.parallel.tensor_model_parallel_size;
  const int pp = job.parallel.pipeline_model_parallel_size;
  const int cp = job.parallel.context_parallel_size;
  std::vector<CommGroupKind> g = megatron_comm_groups(n, tp, pp, cp);
  if (job.system.comm_init_lazy) {
    // Today's Megatron-Core (parallel_state.py initialize_model_parallel) also builds a gloo twin
    // of the DP-with-CP groups and of the expert-DP groups, the latter even for a dense model
    // (its expert grid then mirrors the attention grid), and the expert-parallel groups.
    const std::int64_t dp_cp = n / (static_cast<std::int64_t>(tp) * pp);
    const int ep = std::max(1, job.parallel.expert_model_parallel_size);
    const std::int64_t edp = n / (static_cast<std::int64_t>(expert_tensor_parallel_size(job)) * ep * pp);
    if (dp_cp > 0) g.push_back({"dp-cp-gloo", n / dp_cp, dp_cp});
    if (edp > 0) g.push_back({"expert-dp-gloo", n / edp, edp});
    if (ep > 1) {
      g.push_back({"ep", n / ep, ep});
      if (edp > 0) g.push_back({"expert-dp", n / edp, edp});
    }
  }
  if (!job.system.gloo_process_groups) std::erase_if(g, is_gloo);
  return g;
}

CommInitResult model_comm_init(const JobSpec& job, const CommInitConstants& k) {
  CommInitInput in;
  in.num_gpus = job.cluster.num_gpus;
  in.groups = job_comm_groups(job);
  in.store = job.system.comm_init_store;
  in.ordered = job.system.comm_init_ordered;
  in.lazy = job.system.comm_init_lazy;
  return model_comm_init(in, k);
}

}  // namespace megasim
