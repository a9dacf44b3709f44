#pragma once
// Communicator-initialisation (start-up) model, MegaScale §3.5 (reference/megascale.md §7).
//
// Mechanism. Megatron creates many process groups (TP, PP, DP, CP, model-parallel, embedding,
// gloo twins, ...). torch.distributed's new_group() is called by every rank for every group and,
// in the versions MegaScale started from, ends with a store-based barrier over the whole world:
//   unordered init: one global barrier per group  -> G barriers x O(n) store ops = O(n^2) ops
//                   (G grows with n), and the groups are created one after another;
//   ordered init:   groups of one kind are disjoint, so they are created concurrently and one
//                   global barrier per kind suffices -> O(n) store ops in total.
// Store service: a TCPStore server is one blocking thread, so store ops queue and are served
// one at a time (cost per op x ops); a Redis-style store serves clients concurrently, bounded
// by its request throughput. Every group creation also pays a fixed serialised cost (NCCL
// communicator bootstrap + barrier wake-up) that no store change removes.
#include <cstdint>
#include <string>
#include <vector>

#include "megasim/config/specs.hpp"

namespace megasim {

struct JobSpec;

// A kind of process group: `count` disjoint groups of `size` ranks each.
struct CommGroupKind {
  std::string name;       // "tp", "pp", "dp", "dp-gloo", "cp", "mp", "embedding", ...
  std::int64_t count = 0;
  std::int64_t size = 0;
};

// Physical constants of the model; loaded from configs/reliability/comm_init.json.
struct CommInitConstants {
  double tcpstore_op_s = 0;           // service time of one store op on the loaded TCPStore thread
  double redis_ops_per_s = 0;         // request throughput of one Redis server
  double group_fixed_s = 0;           // serialised cost per group creation (NCCL bootstrap etc.)
  int store_ops_per_rank_per_barrier = 2;  // add() + the final check that sees the full count
};

struct CommInitInput {
  std::int64_t num_gpus = 0;
  std::vector<CommGroupKind> groups;
  CommInitStore store = CommInitStore::TcpStore;
  bool ordered = false;
};

struct CommInitResult {
  double total_s = 0;
  double store_s = 0;           // time the store spends serving barrier ops
  double group_fixed_s = 0;     // serialised group-creation cost
  std::int64_t barriers = 0;    // global barriers executed
  double store_ops = 0;         // store ops issued in total (all ranks, all barriers)
};

// The groups Megatron-LM (commit 285068c8, MegaScale's baseline) creates for a TP/PP/CP plan on
// num_gpus GPUs: dp (+ its gloo twin), tp, pp, mp (tp x pp), embedding and position-embedding
// groups (one per pipeline), and cp (+ dp x cp) groups when cp > 1. Throws InputError when the
// sizes do not divide num_gpus.
std::vector<CommGroupKind> megatron_comm_groups(std::int64_t num_gpus, int tp, int pp, int cp);

// Pure: start-up time of the communicator initialisation.
CommInitResult model_comm_init(const CommInitInput& in, const CommInitConstants& k);

// Convenience for a job: Megatron groups of its plan, store and ordering from job.system
// (comm_init_store, comm_init_ordered). This is the figure to report as StepReport::startup_s.
CommInitResult model_comm_init(const JobSpec& job, const CommInitConstants& k);

}  // namespace megasim
