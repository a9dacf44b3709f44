#include "megasim/sweep/ablation.hpp"

#include <cstdio>

#include "megasim/core/error.hpp"
#include "megasim/sweep/parallel_for.hpp"

namespace megasim {

namespace {

const char* on_off(bool v) { return v ? "on" : "off"; }

AblationFlip flip(const char* technique, const char* path, bool current) {
  return {technique, {std::string(path) + "=" + (current ? "false" : "true")}, on_off(current), on_off(!current)};
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%%", 100.0 * fraction);
  return buf;
}

}  // namespace

std::vector<AblationFlip> ablation_flips(const JobSpec& job) {
  const SystemSpec& s = job.system;
  std::vector<AblationFlip> f;
  // Model co-design (MegaScale section 3.1).
  // (Not for an MoE model, whose parallel block megasim does not model.)
  if (!is_moe(job.model)) {
    f.push_back(flip("parallel transformer block", "model.use_parallel_residual", job.model.use_parallel_residual));
  }
  if (job.model.sliding_window) {
    f.push_back({"sliding-window attention", {"model.sliding_window=null"},
                 std::to_string(*job.model.sliding_window) + "-token window", "full causal"});
  }
  // Communication overlap (section 3.2): only where the dimension exists.
  if (job.parallel.tensor_model_parallel_size > 1) f.push_back(flip("TP overlap", "system.tp_overlap", s.tp_overlap));
  if (job.parallel.virtual_pipeline_model_parallel_size > 1) f.push_back(flip("PP overlap", "system.pp_overlap", s.pp_overlap));
  if (job.parallel.data_parallel_size > 1) {
    f.push_back(flip("DP overlap", "system.dp_overlap", s.dp_overlap));
    if (s.dp_overlap) {
      f.push_back(flip("first DP all-gather prefetched", "system.dp_prefetch_first_all_gather",
                       s.dp_prefetch_first_all_gather));
    }
  }
  // Efficient operators (section 3.3): the attention kernel flips between a fused kernel and
  // Megatron-LM's unfused one, whichever the job does not run.
  f.push_back(flip("fused LayerNorm/GeLU/bias-dropout-add", "system.fused_kernels", s.fused_kernels));
  const bool fused_attention =
      s.attention_kernel == AttentionKernel::FlashV2 || s.attention_kernel == AttentionKernel::CudnnFused;
  const std::string attention_to = fused_attention ? "unfused" : "flash-v2";
  f.push_back({"fused attention kernel", {"system.attention_kernel=" + attention_to}, to_string(s.attention_kernel),
               attention_to});
  // Mixture of Experts: the grouped expert GEMM, the routing the step assumes, and the overlaps
  // of the EP dispatch (Megatron-Core's switches).
  if (is_moe(job.model)) {
    f.push_back(flip("grouped expert GEMM", "system.moe_grouped_gemm", s.moe_grouped_gemm));
    f.push_back(flip("forced expert balance", "training.moe_router_force_load_balancing",
                     job.training.moe_router_force_load_balancing));
    if (job.parallel.expert_model_parallel_size > 1) {
      // The two overlaps exclude each other (Megatron-Core's rule): each is offered only while
      // the other is off, and the 1F1B one only where Megatron-Core runs it (validate.cpp).
      if (job.model.moe.shared_expert_intermediate_size > 0 && !s.overlap_moe_expert_parallel_comm) {
        f.push_back(flip("shared-expert overlap", "system.moe_shared_expert_overlap", s.moe_shared_expert_overlap));
      }
      if (merged_a2a_overlap_refusal(job) == nullptr) {
        f.push_back(flip("1F1B all-to-all overlap", "system.overlap_moe_expert_parallel_comm",
                         s.overlap_moe_expert_parallel_comm));
      }
    }
  }
  // Data pipeline (section 3.4) and the GC fix (section 6.3).
  f.push_back(flip("asynchronous data preprocessing", "system.async_data_preprocessing", s.async_data_preprocessing));
  f.push_back(flip("one data loader per node", "system.data_loader_per_node", s.data_loader_per_node));
  f.push_back(flip("GC launch skew fixed", "system.gc_stragglers_fixed", s.gc_stragglers_fixed));
  // LAMB: its gain is the larger batch it permits (the ablation's x3), not the optimizer itself.
  if (job.training.optimizer == Optimizer::Adam) {
    const std::int64_t batch = job.training.global_batch_size;
    f.push_back({"LAMB with a 3x batch",
                 {"training.optimizer=lamb", "training.global_batch_size=" + std::to_string(3 * batch)},
                 "adam, batch " + std::to_string(batch), "lamb, batch " + std::to_string(3 * batch)});
  }
  // Straggler hunting (section 5.1): only a fleet with slow hosts has any to remove.
  const double fraction = s.straggler_host_fraction.value_or(job.cluster.straggler_host_fraction);
  const double slowdown = s.straggler_slowdown.value_or(job.cluster.straggler_slowdown);
  if (fraction > 0 && slowdown > 0) {
    f.push_back({"straggler hunting", {"system.straggler_host_fraction=0"},
                 percent(fraction) + " of hosts " + percent(slowdown) + " slower", "no slow hosts"});
  }
  // Communicator start-up (section 3.5): moves startup_s, not the step.
  const std::string store_to = s.comm_init_store == CommInitStore::Redis ? "tcpstore" : "redis";
  f.push_back({"communicator store", {"system.comm_init_store=" + store_to}, to_string(s.comm_init_store), store_to});
  if (s.comm_init_lazy) {
    // Today's PyTorch: no barrier to order; what moves start-up is the gloo groups' full meshes.
    f.push_back(flip("gloo process groups", "system.gloo_process_groups", s.gloo_process_groups));
  } else {
    f.push_back(flip("ordered communicator init", "system.comm_init_ordered", s.comm_init_ordered));
  }
  return f;
}

Ablation run_ablation(const JobSpec& base, const SweepJobLoader& load,
                      const std::function<StepReport(const JobSpec&)>& simulate, const AblationOptions& opts) {
  Ablation a;
  const std::vector<AblationFlip> flips = ablation_flips(base);
  a.rows.resize(flips.size());
  // Index 0 is the base job; index i + 1 flips flips[i]. Each writes its own slot.
  parallel_for(
      flips.size() + 1, resolve_jobs(opts.jobs),
      [&](std::size_t i) {
        if (i == 0) {
          a.base = simulate(base);
          return;
        }
        AblationRow& row = a.rows[i - 1];
        row.flip = flips[i - 1];
        try {
          row.report = simulate(load(row.flip.sets));
        } catch (const InputError& e) {
          row.error = e.what();
        }
      },
      [&](std::size_t done, std::size_t n) {
        if (opts.progress) opts.progress("ablate " + std::to_string(done) + "/" + std::to_string(n) + " runs");
      });
  return a;
}

}  // namespace megasim
