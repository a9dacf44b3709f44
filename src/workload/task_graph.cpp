#include "megasim/workload/task_graph.hpp"

#include "megasim/workload/merged_pairs.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

namespace megasim {

const char* to_string(TaskKind kind) {
  switch (kind) {
    case TaskKind::DataLoad: return "data_loading";
    case TaskKind::Forward: return "F";
    case TaskKind::Backward: return "B";
    case TaskKind::PpTransfer: return "pp_transfer";
    case TaskKind::DpAllGather: return "dp_all_gather";
    case TaskKind::DpReduceScatter: return "dp_reduce_scatter";
    case TaskKind::DpAllReduce: return "dp_all_reduce";
    case TaskKind::Optimizer: return "optimizer";
    case TaskKind::StepEnd: return "step_end";
  }
  return "?";
}

bool is_dp_collective(TaskKind kind) {
  return kind == TaskKind::DpAllGather || kind == TaskKind::DpReduceScatter ||
         kind == TaskKind::DpAllReduce;
}

std::string StepGraph::describe(TaskIndex t) const {
  const StepTask& k = tasks.at(t);
  std::string s = "stage " + std::to_string(k.stage) + " " + to_string(k.kind);
  if (k.kind == TaskKind::PpTransfer) s += "->" + std::to_string(k.peer_stage);
  if (k.for_pass == TaskKind::Forward || k.for_pass == TaskKind::Backward) s += std::string(" ") + to_string(k.for_pass);
  if (k.chunk >= 0) s += " chunk " + std::to_string(k.chunk);
  if (k.micro_batch >= 0) s += " mb " + std::to_string(k.micro_batch);
  if (k.buckets > 1) s += " bucket " + std::to_string(k.bucket + 1) + "/" + std::to_string(k.buckets);
  if (k.expert_dp) s += " experts";
  return s;
}

WorkloadOptions workload_options(const JobSpec& job) {
  WorkloadOptions o;
  o.zero_stage = job.parallel.zero_stage;
  o.dp_overlap = job.system.dp_overlap;
  o.dp_prefetch_first_all_gather = job.system.dp_prefetch_first_all_gather;
  // Megatron-Core's distributed optimizer (bucketed overlap, ZeRO 1-2) dispatches the first
  // gather from the forward pre-hook (distributed_data_parallel.py finish_param_sync) unless the
  // schedule does (align_param_gather: Megatron-Bridge and NeMo set it exactly when the pipeline
  // is interleaved, training/comm_overlap.py _get_optimizer_overlap_cfgs; chunks 0 and 1 then go
  // at the schedule's start on every stage, schedules.py).
  o.dp_first_gather_at_first_forward = job.system.dp_overlap && job.system.dp_megatron_core_ddp &&
                                       !job.system.dp_prefetch_first_all_gather &&
                                       job.system.dp_overlap_granularity == DpOverlapGranularity::Bucket &&
                                       (job.parallel.zero_stage == 1 || job.parallel.zero_stage == 2) &&
                                       job.parallel.virtual_pipeline_model_parallel_size == 1;
  o.pp_overlap = pipeline_transfers_overlap(job);
  o.reduce_every_micro_batch = gradients_reduced_every_micro_batch(job);
  return o;
}

namespace {

class Builder {
 public:
  Builder(const StepCosts& c, const WorkloadOptions& o) : c_(c), o_(o) {
    g_.stages = c.pp;
    g_.vpp = c.vpp;
    g_.micro_batches = c.micro_batches;
    g_.compute_order.resize(static_cast<std::size_t>(c.pp));
    g_.dp_order.resize(static_cast<std::size_t>(c.pp));
    dp_keys_.resize(static_cast<std::size_t>(c.pp));
  }

  StepGraph build() {
    const int p = c_.pp;
    for (int s = 0; s < p; ++s) build_compute(s);
    for (int s = 0; s < p; ++s) wire_pipeline(s);
    for (int s = 0; s < p; ++s) add_dp(s);
    add_optimizer_and_end();
    for (int s = 0; s < p; ++s) {
      auto& keys = dp_keys_[static_cast<std::size_t>(s)];
      std::stable_sort(keys.begin(), keys.end());
      for (const auto& k : keys) g_.dp_order[static_cast<std::size_t>(s)].push_back(std::get<2>(k));
    }
    return std::move(g_);
  }

 private:
  TaskIndex add(StepTask t) {
    g_.tasks.push_back(std::move(t));
    return static_cast<TaskIndex>(g_.tasks.size() - 1);
  }
  std::vector<TaskIndex>& order(int s) { return g_.compute_order[static_cast<std::size_t>(s)]; }
  const ChunkCosts& chunk(int s, int c) const {
    return c_.chunks[static_cast<std::size_t>(s)][static_cast<std::size_t>(c)];
  }
  TaskIndex pass(int s, int c, std::int64_t mb, bool fwd) const {
    return pass_.at({s, c, mb, fwd});
  }

  void build_compute(int s) {
    StepTask load;
    load.kind = TaskKind::DataLoad;
    load.stage = s;
    load.fixed_s = c_.data_loading_s;
    order(s).push_back(add(load));
    const auto sched = stage_schedule(o_.schedule, c_.pp, c_.vpp, c_.micro_batches, s, c_.extra_warmup_passes);
    // Under Megatron-Core's merged 1F1B the steady state's forward-backward pairs run merged,
    // each hiding its EP exchanges behind the other's compute as far as their layers pair up;
    // warm-up forwards and cool-down backwards run alone (merged_pairs.hpp).
    const bool one_f_one_b = o_.schedule == PipelineSchedule::OneFOneB;
    const std::int64_t warm =
        one_f_one_b ? warmup_passes(c_.pp, c_.vpp, c_.micro_batches, s, c_.extra_warmup_passes) : 0;
    const std::vector<bool> merged_pass = merged_passes(c_, o_.schedule, s, sched);
    const std::vector<double> ep_s = scheduled_ep_exposure_s(c_, s, sched, merged_pass);
    for (std::size_t i = 0; i < sched.size(); ++i) {
      const ChunkPass& cp = sched[i];
      const ChunkCosts& ch = chunk(s, cp.chunk);
      const bool merged = merged_pass[i];
      StepTask t;
      t.kind = cp.forward ? TaskKind::Forward : TaskKind::Backward;
      t.stage = s;
      t.chunk = cp.chunk;
      t.micro_batch = cp.micro_batch;
      t.compute_s = cp.forward ? ch.fwd_compute_s : ch.bwd_compute_s;
      t.tp_exposed_s = cp.forward ? ch.fwd_tp_exposed_s : ch.bwd_tp_exposed_s;
      t.cp_exposed_s = cp.forward ? ch.fwd_cp_exposed_s : ch.bwd_cp_exposed_s;
      t.ep_exposed_s = ep_s[i];
      t.pp_wait_s = !cp.forward && merged ? ch.merged_pp_wait_s : 0.0;
      const double pass_s = t.compute_s + t.tp_exposed_s + t.cp_exposed_s + t.ep_exposed_s;
      t.straggler_s = c_.straggler_slowdown * pass_s;
      t.other_s = c_.launch_overhead_per_chunk_s + t.straggler_s;
      const TaskIndex id = add(t);
      position_[id] = order(s).size();
      pass_[{s, cp.chunk, cp.micro_batch, cp.forward}] = id;
      order(s).push_back(id);
    }
    group_passes(s, one_f_one_b && c_.vpp > 1 ? warm : 0);
  }

  struct PassGroup {
    TaskIndex first;
    TaskIndex last;
  };

  // Megatron's program between two blocking p2p exchanges: one pass, except that the
  // interleaved schedule's steady state runs a forward and a backward and then exchanges
  // once (send_forward_backward_recv_forward_backward). interleaved_warm: the interleaved
  // schedule's warm-up forwards on this stage, 0 for any other schedule (no pairs).
  void group_passes(int s, std::int64_t interleaved_warm) {
    auto& groups = groups_[s];
    const auto& ord = order(s);
    const bool interleaved = o_.schedule == PipelineSchedule::OneFOneB && c_.vpp > 1;
    const std::int64_t total = c_.micro_batches * c_.vpp;
    const std::int64_t warm = interleaved_warm;
    // Program positions (after the data load) of the steady state's forward-backward pairs.
    const std::size_t steady_begin = static_cast<std::size_t>(warm) + 1;
    const std::size_t steady_end = steady_begin + 2 * static_cast<std::size_t>(total - warm);
    for (std::size_t i = 1; i < ord.size(); ++i) {
      const bool second_of_pair = interleaved && i > steady_begin && i < steady_end &&
                                  (i - steady_begin) % 2 == 1;
      if (second_of_pair) {
        groups.back().last = ord[i];
      } else {
        groups.push_back({ord[i], ord[i]});
      }
      group_of_[ord[i]] = groups.size() - 1;
    }
  }
  // Connects producer -> consumer, through a transfer when they are on different stages.
  void link(TaskIndex producer, TaskIndex consumer) {
    const int from = g_.tasks[producer].stage;
    const int to = g_.tasks[consumer].stage;
    if (from == to) {
      g_.tasks[consumer].deps.push_back(producer);
      return;
    }
    StepTask x;
    x.kind = TaskKind::PpTransfer;
    x.stream = TaskStream::Network;
    x.stage = from;
    x.peer_stage = to;
    x.chunk = g_.tasks[producer].chunk;
    x.micro_batch = g_.tasks[producer].micro_batch;
    x.for_pass = g_.tasks[producer].kind;
    x.bytes = c_.p2p_bytes;
    if (o_.pp_overlap || o_.schedule == PipelineSchedule::GPipe) {
      // Asynchronous: the transfer blocks nothing but its consumer.
      x.deps.push_back(producer);
      const TaskIndex xi = add(x);  // may reallocate tasks: index after it
      g_.tasks[consumer].deps.push_back(xi);
      if (!o_.pp_overlap) {
        // Blocking GPipe (not a Megatron schedule): with v > 1 a rendezvous exchange would
        // deadlock (stage p-1's chunk-0 sends wait for stage 0 to finish all its chunk-0
        // forwards), so only the sender's next pass waits for its send.
        const auto& ord = order(from);
        const std::size_t next = position_.at(producer) + 1;
        if (next < ord.size()) g_.tasks[ord[next]].deps.push_back(xi);
      }
      return;
    }
    // Blocking exchange: the send is posted after the producer's group, the matching receive
    // after the group before the consumer's (the data load for the first group); the wire
    // moves once both are posted, and both sides' next groups wait for the whole exchange.
    const auto& send_groups = groups_.at(from);
    const auto& recv_groups = groups_.at(to);
    const std::size_t gp = group_of_.at(producer);
    const std::size_t gc = group_of_.at(consumer);
    x.deps.push_back(send_groups[gp].last);
    x.deps.push_back(gc > 0 ? recv_groups[gc - 1].last : order(to).front());
    const TaskIndex xi = add(x);
    g_.tasks[recv_groups[gc].first].deps.push_back(xi);
    if (recv_groups[gc].first != consumer) g_.tasks[consumer].deps.push_back(xi);
    if (gp + 1 < send_groups.size()) g_.tasks[send_groups[gp + 1].first].deps.push_back(xi);
  }

  void wire_pipeline(int s) {
    const int p = c_.pp;
    const int nv = p * c_.vpp;
    for (int c = 0; c < c_.vpp; ++c) {
      const int vs = c * p + s;
      for (std::int64_t mb = 0; mb < c_.micro_batches; ++mb) {
        if (vs > 0) link(pass((vs - 1) % p, (vs - 1) / p, mb, true), pass(s, c, mb, true));
        if (vs < nv - 1) link(pass((vs + 1) % p, (vs + 1) / p, mb, false), pass(s, c, mb, false));
      }
    }
  }

  TaskIndex add_collective(int s, TaskKind kind, double bytes, int chunk_id, std::int64_t mb,
                           double key) {
    StepTask t;
    t.kind = kind;
    t.stream = TaskStream::DpComm;
    t.stage = s;
    t.chunk = chunk_id;
    t.micro_batch = mb;
    t.bytes = bytes;
    const TaskIndex id = add(t);
    dp_keys_[static_cast<std::size_t>(s)].emplace_back(key, seq_++, id);
    return id;
  }

  // One DP collective's pair: the dense bytes over the DP groups (when DP > 1) and the routed
  // experts' over the expert-DP groups (when there are any), the latter next on the DP stream;
  // the dense one first in the result when there is one.
  std::vector<TaskIndex> add_dp_pair(int s, TaskKind kind, double dense_bytes, double expert_bytes, int chunk_id,
                                     std::int64_t mb, double key) {
    std::vector<TaskIndex> out;
    if (c_.dp > 1) out.push_back(add_collective(s, kind, dense_bytes, chunk_id, mb, key));
    if (expert_bytes > 0) {
      const TaskIndex e = add_collective(s, kind, expert_bytes, chunk_id, mb, key);
      g_.tasks[e].expert_dp = true;
      out.push_back(e);
    }
    return out;
  }

  TaskIndex last_backward(int s, int c) const {
    TaskIndex best = 0;
    std::size_t pos = 0;
    for (std::int64_t mb = 0; mb < c_.micro_batches; ++mb) {
      const TaskIndex t = pass(s, c, mb, false);
      if (position_.at(t) >= pos) { pos = position_.at(t); best = t; }
    }
    return best;
  }
  TaskIndex first_forward(int s, int c) const {
    TaskIndex best = 0;
    std::size_t pos = SIZE_MAX;
    for (std::int64_t mb = 0; mb < c_.micro_batches; ++mb) {
      const TaskIndex t = pass(s, c, mb, true);
      if (position_.at(t) < pos) { pos = position_.at(t); best = t; }
    }
    return best;
  }

  // Overlapped DP collectives of chunk c each way (system.dp_overlap_granularity).
  int buckets(int s, int c) const { return std::max(1, chunk(s, c).dp_buckets); }

  // Splits pass t into n equal back-to-back pieces on its compute program, so that a DP
  // bucket can be released by (or wait for) part of a pass: piece 0 keeps t's index and
  // inputs, and everything that waited for the whole pass now waits for the last piece.
  std::vector<TaskIndex> split_pass(int s, TaskIndex t, int n) {
    if (const auto done = pieces_.find(t); done != pieces_.end()) return done->second;
    std::vector<TaskIndex> pieces{t};
    if (n <= 1) return pieces;
    const double f = 1.0 / static_cast<double>(n);
    StepTask& whole = g_.tasks[t];
    whole.compute_s *= f;
    whole.tp_exposed_s *= f;
    whole.cp_exposed_s *= f;
    whole.ep_exposed_s *= f;
    whole.other_s *= f;
    whole.straggler_s *= f;
    whole.fixed_s *= f;
    whole.bucket = 0;
    whole.buckets = n;
    StepTask piece = whole;
    piece.deps.clear();
    const auto first_new = static_cast<TaskIndex>(g_.tasks.size());
    for (int k = 1; k < n; ++k) {
      StepTask next = piece;
      next.bucket = k;
      next.deps.push_back(pieces.back());
      pieces.push_back(add(std::move(next)));
    }
    for (TaskIndex u = 0; u < first_new; ++u) {
      for (TaskIndex& d : g_.tasks[u].deps) {
        if (d == t) d = pieces.back();
      }
    }
    auto& ord = order(s);
    const auto at = std::find(ord.begin(), ord.end(), t);
    ord.insert(at + 1, pieces.begin() + 1, pieces.end());
    pieces_[t] = pieces;
    return pieces;
  }

  // A bucket's collective is named after the pass piece that produces or consumes it.
  void same_bucket(TaskIndex collective, TaskIndex piece) {
    g_.tasks[collective].bucket = g_.tasks[piece].bucket;
    g_.tasks[collective].buckets = g_.tasks[piece].buckets;
  }

  void add_dp(int s) {
    auto& ready = grads_ready_;
    const double grad = c_.dp_grad_reduce_bytes;
    const double param = c_.dp_param_gather_bytes;
    const double egrad = c_.edp_grad_reduce_bytes;
    const double eparam = c_.edp_param_gather_bytes;
    const TaskIndex load = order(s).front();
    if (!c_.has_dp_collectives()) {
      ready.push_back(order(s).back());
      return;
    }
    const TaskKind reduce = o_.zero_stage == 0 ? TaskKind::DpAllReduce : TaskKind::DpReduceScatter;
    const bool per_chunk = o_.dp_overlap || o_.zero_stage == 3 || o_.reduce_every_micro_batch;
    const bool gather_per_chunk = o_.zero_stage >= 1 && o_.zero_stage <= 2 && o_.dp_overlap;

    // Split first, so that every DP-stream key below comes from the final compute program:
    // ZeRO-3 gathers every pass's parameters bucket by bucket; ZeRO 0-2 reduce each chunk's
    // gradients as its last backward produces them (every backward when they are reduced
    // every micro-batch) and gather before its first forward.
    std::vector<std::pair<int, std::vector<TaskIndex>>> reduce_pieces;  // (chunk, pass pieces)
    std::vector<std::vector<TaskIndex>> gather_pieces;                  // [chunk]
    if (o_.zero_stage == 3) {
      const std::vector<TaskIndex> passes(order(s).begin() + 1, order(s).end());
      for (const TaskIndex t : passes) split_pass(s, t, buckets(s, g_.tasks[t].chunk));
    }
    for (int c = 0; c < c_.vpp; ++c) {
      if (o_.reduce_every_micro_batch) {
        for (std::int64_t mb = 0; mb < c_.micro_batches; ++mb) {
          reduce_pieces.emplace_back(c, split_pass(s, pass(s, c, mb, false), buckets(s, c)));
        }
      } else if (per_chunk) {
        reduce_pieces.emplace_back(c, split_pass(s, last_backward(s, c), buckets(s, c)));
      }
      if (gather_per_chunk) gather_pieces.push_back(split_pass(s, first_forward(s, c), buckets(s, c)));
    }
    std::map<TaskIndex, double> pos;  // position on the stage's compute program
    for (std::size_t i = 0; i < order(s).size(); ++i) pos[order(s)[i]] = static_cast<double>(i);

    // The stage's last gradient reduction is the one a late rank holds up (GC skew): of the last
    // pair, the first posted (the expert one follows it on the DP stream).
    TaskIndex last_reduce = 0;
    double last_key = -1;
    if (per_chunk) {
      for (const auto& [c, pieces] : reduce_pieces) {
        // One reduction per bucket, each released by the piece of the chunk's (last) backward
        // that produces its gradients (one piece, the whole pass, per chunk by default).
        const double n = static_cast<double>(pieces.size());
        const double share = c_.dp_share(s, c) / n;
        for (const TaskIndex piece : pieces) {
          const double key = pos.at(piece) + 0.5;
          const std::vector<TaskIndex> pair = add_dp_pair(s, reduce, grad * share, egrad * share, c, -1, key);
          for (const TaskIndex r : pair) {
            same_bucket(r, piece);
            g_.tasks[r].deps.push_back(piece);
            ready.push_back(r);
          }
          if (key > last_key) {
            last_key = key;
            last_reduce = pair.front();
          }
        }
      }
    } else {
      const TaskIndex last = order(s).back();
      const std::vector<TaskIndex> pair = add_dp_pair(s, reduce, grad, egrad, -1, -1, pos.at(last));
      for (const TaskIndex r : pair) {
        g_.tasks[r].deps.push_back(last);
        ready.push_back(r);
      }
      last_reduce = pair.front();
    }
    g_.tasks[last_reduce].launch_delay_s = c_.gc_skew_s;
    ready.push_back(order(s).back());
    if (o_.zero_stage == 3) {
      // Re-gather each chunk's parameters (one bucket of them per piece) before every pass,
      // two passes (pieces) ahead.
      const auto& ord = order(s);
      for (std::size_t i = 1; i < ord.size(); ++i) {
        const int ck = g_.tasks[ord[i]].chunk;
        const std::int64_t mb = g_.tasks[ord[i]].micro_batch;
        const double key = static_cast<double>(i) - 2.5;
        const double share = c_.dp_share(s, ck) / buckets(s, ck);
        for (const TaskIndex ag : add_dp_pair(s, TaskKind::DpAllGather, param * share, eparam * share, ck, mb, key)) {
          same_bucket(ag, ord[i]);
          g_.tasks[ag].for_pass = g_.tasks[ord[i]].kind;
          g_.tasks[ag].deps.push_back(i >= 3 ? ord[i - 2] : load);
          g_.tasks[ord[i]].deps.push_back(ag);
        }
      }
    } else if (gather_per_chunk) {
      for (int c = 0; c < c_.vpp; ++c) {
        // Gathered in bucket order ahead of the first forward; each piece of that forward
        // waits only for its own bucket.
        const auto& pieces = gather_pieces[static_cast<std::size_t>(c)];
        const double share = c_.dp_share(s, c) / static_cast<double>(pieces.size());
        // What the first forward waits for besides the load: its inputs (the previous stage's).
        const std::vector<TaskIndex> forward_inputs = g_.tasks[pieces.front()].deps;
        for (std::size_t k = 0; k < pieces.size(); ++k) {
          const double key = -1.0 + c * 1e-3 + static_cast<double>(k) * 1e-6;
          const std::vector<TaskIndex> pair =
              add_dp_pair(s, TaskKind::DpAllGather, param * share, eparam * share, c, -1, key);
          for (std::size_t i = 0; i < pair.size(); ++i) {
            const TaskIndex ag = pair[i];
            same_bucket(ag, pieces[k]);
            if (c == 0 && k == 0 && !o_.dp_prefetch_first_all_gather) {
              auto& deps = g_.tasks[ag].deps;
              if (!o_.dp_first_gather_at_first_forward) {
                deps.push_back(load);
              } else if (i == 0) {
                // The pre-hook runs once the forward has its batch (get_batch) and its inputs.
                deps.push_back(load);
                deps.insert(deps.end(), forward_inputs.begin(), forward_inputs.end());
              } else {
                // The expert buffer's gather goes when the first expert module runs, after the
                // dense one has been waited for (its own bucket group, no chained prefetch).
                deps.push_back(pair[0]);
              }
            }
            g_.tasks[pieces[k]].deps.push_back(ag);
          }
        }
      }
    }
  }

  void add_optimizer_and_end() {
    const double big = 1e18;
    for (int s = 0; s < c_.pp; ++s) {
      StepTask opt;
      opt.kind = TaskKind::Optimizer;
      opt.stage = s;
      opt.fixed_s = c_.optimizer_s;
      opt.deps = grads_ready_;  // global grad-norm barrier
      const TaskIndex oi = add(opt);
      order(s).push_back(oi);
      StepTask end;
      end.kind = TaskKind::StepEnd;
      end.stage = s;
      if (c_.has_dp_collectives() && o_.zero_stage >= 1 && o_.zero_stage <= 2 && !o_.dp_overlap) {
        for (const TaskIndex ag :
             add_dp_pair(s, TaskKind::DpAllGather, c_.dp_param_gather_bytes, c_.edp_param_gather_bytes, -1, -1, big)) {
          g_.tasks[ag].deps.push_back(oi);
          end.deps.push_back(ag);
        }
      }
      order(s).push_back(add(end));
    }
  }

  const StepCosts& c_;
  const WorkloadOptions& o_;
  StepGraph g_;
  std::map<std::tuple<int, int, std::int64_t, bool>, TaskIndex> pass_;
  std::map<TaskIndex, std::size_t> position_;
  std::map<int, std::vector<PassGroup>> groups_;   // [stage] blocking-exchange groups
  std::map<TaskIndex, std::size_t> group_of_;      // pass -> its group on its stage
  std::vector<TaskIndex> grads_ready_;
  std::map<TaskIndex, std::vector<TaskIndex>> pieces_;  // split passes -> their pieces
  std::vector<std::vector<std::tuple<double, std::uint64_t, TaskIndex>>> dp_keys_;
  std::uint64_t seq_ = 0;
};

void check(const StepCosts& c) {
  if (c.pp < 1 || c.vpp < 1 || c.micro_batches < 1 || c.dp < 1) {
    throw std::invalid_argument("build_step_graph: pp, vpp, micro_batches and dp must be >= 1");
  }
  if (c.chunks.size() != static_cast<std::size_t>(c.pp)) {
    throw std::invalid_argument("build_step_graph: costs.chunks must have pp stages");
  }
  for (const auto& st : c.chunks) {
    if (st.size() != static_cast<std::size_t>(c.vpp)) {
      throw std::invalid_argument("build_step_graph: every stage needs vpp chunks");
    }
  }
}

}  // namespace

StepGraph build_step_graph(const StepCosts& costs, const WorkloadOptions& options) {
  check(costs);
  Builder b(costs, options);
  return b.build();
}

}  // namespace megasim
