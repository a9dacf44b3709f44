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
//
// Today's PyTorch (lazy = true): new_group() ends with no barrier (TORCH_DIST_INIT_BARRIER
// defaults to 0 since PyTorch 2.1, distributed_c10d.py _is_barrier_after_init) and a
// non-member returns before touching the store; NCCL communicators are created at a group's
// first collective (ProcessGroupNCCL is lazy without init_process_group's device_id, which
// Megatron-Core stopped passing in commit dcc6634c, 2024-09). So the start-up is
//   rendezvous: every rank connects to the one (libuv) TCPStore server, one after another;
//   NCCL unique ids: each communicator's rank 0 sets its id, the other members get it - all
//     groups of a kind at once, the store serving the ops one at a time;
//   gloo groups (Megatron-Core's create_gloo_process_groups): Gloo connects a full mesh at
//     creation, each member setting its address and getting every other member's (gloo tcp
//     context.cc connectFullMesh): size^2 store ops per group;
//   each rank then builds its own communicators one after another (one per kind it is in,
//     plus the world communicator of Megatron's first barrier): group_fixed_s each.
// The Python loop in which every rank calls new_group for every group (a non-member's call is
// bookkeeping only) is not counted.
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
  double store_connect_s = 0;         // one rank's rendezvous connection to the TCPStore server
};

struct CommInitInput {
  std::int64_t num_gpus = 0;
  std::vector<CommGroupKind> groups;
  CommInitStore store = CommInitStore::TcpStore;
  bool ordered = false;
  bool lazy = false;  // today's PyTorch: no barrier per group, NCCL communicators at first use
};

struct CommInitResult {
  double total_s = 0;
  double store_s = 0;           // time the store spends serving barrier ops
  double group_fixed_s = 0;     // serialised group-creation cost
  std::int64_t barriers = 0;    // global barriers executed
  double store_ops = 0;         // store ops issued in total (all ranks, all barriers)
  double rendezvous_s = 0;      // lazy: every rank's connection to the store
};

// The groups Megatron-LM (commit 285068c8, MegaScale's baseline) creates for a TP/PP/CP plan on
// num_gpus GPUs: dp (+ its gloo twin), tp, pp, mp (tp x pp), embedding and position-embedding
// groups (one per pipeline), and cp (+ dp x cp) groups when cp > 1. Throws InputError when the
// sizes do not divide num_gpus.
std::vector<CommGroupKind> megatron_comm_groups(std::int64_t num_gpus, int tp, int pp, int cp);

// The group kinds of a job as it runs them: megatron_comm_groups less the gloo twins when
// system.gloo_process_groups is off.
std::vector<CommGroupKind> job_comm_groups(const JobSpec& job);

// Pure: start-up time of the communicator initialisation.
CommInitResult model_comm_init(const CommInitInput& in, const CommInitConstants& k);

// Convenience for a job: Megatron groups of its plan (without the gloo twins when
// system.gloo_process_groups is off), store, ordering and laziness from job.system
// (comm_init_store, comm_init_ordered, comm_init_lazy). This is StepReport::startup_s.
CommInitResult model_comm_init(const JobSpec& job, const CommInitConstants& k);

}  // namespace megasim
