#include "megasim/sweep/plan_space.hpp"

#include <algorithm>
#include <numeric>
#include <tuple>
#include <utility>

#include "megasim/model/memory.hpp"

namespace megasim {

namespace {

std::vector<int> divisors(std::int64_t n) {
  std::vector<int> d;
  for (std::int64_t i = 1; i <= n; ++i) {
    if (n % i == 0) d.push_back(static_cast<int>(i));
  }
  return d;
}

// One pipeline layout: PP with an optional uneven first/last stage, and its VPP choices.
struct PipelineLayout {
  int pp = 1;
  std::optional<int> first;
  std::optional<int> last;
  bool accounted = false;  // embedding and loss counted as layers (Megatron-Core)
  bool with_mtp = false;   // a layout string counting the embedding, the MTP modules and the loss
  std::vector<int> vpps;
};

// Decoder layers per chunk (chunk-major, as ParallelSpec::layout_layers) of a layout_with_mtp
// split: L + 2 + MTP slots, `per` to a chunk; the embedding takes one slot of the first chunk,
// the MTP modules and the loss slots of the last.
std::vector<int> mtp_layout_layers(std::int64_t layers, std::int64_t mtp, int pp, int vpp) {
  const int chunks = pp * vpp;
  const auto per = static_cast<int>((layers + 2 + mtp) / chunks);
  std::vector<int> out(static_cast<std::size_t>(chunks), per);
  out.front() = per - 1;
  out.back() = per - 1 - static_cast<int>(mtp);
  return out;
}

std::vector<PipelineLayout> pipeline_layouts(std::int64_t layers, std::int64_t mtp) {
  std::vector<PipelineLayout> out;
  for (const int pp : divisors(layers)) {
    PipelineLayout l;
    l.pp = pp;
    l.vpps = pp == 1 ? std::vector<int>{1} : divisors(layers / pp);
    out.push_back(l);
  }
  for (std::int64_t pp = 2; pp <= layers; pp *= 2) {
    if (layers % pp == 0) continue;
    const std::int64_t k = (layers + pp - 1) / pp;
    const std::int64_t rest = layers - (pp - 2) * k;
    const std::int64_t first = rest / 2;
    const std::int64_t last = rest - first;
    if (first < 1 || first > last || last > k) continue;
    PipelineLayout l;
    l.pp = static_cast<int>(pp);
    l.first = static_cast<int>(first);
    l.last = static_cast<int>(last);
    // VPP must cut every stage (first, middle, last) into equal chunks.
    const std::int64_t g = std::gcd(std::gcd(first, last), pp > 2 ? k : first);
    l.vpps = divisors(g);
    out.push_back(l);
  }
  // Megatron-Core's split of L + 2 slots (account_for_embedding/loss_in_pipeline_split), for
  // stage counts the layers alone do not divide (e.g. Llama 3.1 405B: 126 + 2 = 128 = 8 x 16);
  // every chunk keeps at least one layer, so (L + 2) / (PP x VPP) >= 2. Without interleaving it
  // is the uneven split with first = last = (L + 2) / PP - 1 layers: left to that family where
  // it already has the layout, so one plan is not listed twice.
  const std::int64_t slots = layers + 2;
  for (const int pp : divisors(slots)) {
    if (pp < 2 || layers % pp == 0) continue;
    const std::int64_t edge = slots / pp - 1;
    const bool uneven_twin = std::any_of(out.begin(), out.end(), [&](const PipelineLayout& u) {
      return u.pp == pp && u.first == edge && u.last == edge;
    });
    PipelineLayout l;
    l.pp = pp;
    l.accounted = true;
    for (const int vpp : divisors(slots / pp)) {
      if (slots / pp / vpp >= 2 && !(vpp == 1 && uneven_twin)) l.vpps.push_back(vpp);
    }
    if (!l.vpps.empty()) out.push_back(l);
  }
  // With MTP modules, Megatron-Core's layout string can count them too (the accounted split
  // above leaves them on the last stage beyond its share): L + 2 + MTP slots over PP x VPP
  // chunks, each keeping its share, the first at least one layer, the last at least its MTP
  // modules and the loss. DeepSeek-V3 (61 + 2 + 1 = 64): PP 8 x VPP 4, 2 a chunk.
  if (mtp > 0) {
    const std::int64_t mtp_slots = layers + 2 + mtp;
    for (const int pp : divisors(mtp_slots)) {
      if (pp < 2) continue;
      PipelineLayout l;
      l.pp = pp;
      l.with_mtp = true;
      for (const int vpp : divisors(mtp_slots / pp)) {
        const std::int64_t per = mtp_slots / pp / vpp;
        if (per >= 2 && per - 1 - mtp >= 0) l.vpps.push_back(vpp);
      }
      if (!l.vpps.empty()) out.push_back(l);
    }
  }
  std::sort(out.begin(), out.end(), [](const PipelineLayout& a, const PipelineLayout& b) {
    return std::tie(a.pp, a.accounted, a.with_mtp, a.first, a.last) <
           std::tie(b.pp, b.accounted, b.with_mtp, b.first, b.last);
  });
  return out;
}

auto as_tuple(const PlanCandidate& c) {
  return std::make_tuple(c.global_batch_size, c.tp, c.cp, c.pp, c.account_for_embedding_and_loss, c.layout_with_mtp,
                         c.first_stage_layers.value_or(0),
                         c.last_stage_layers.value_or(0), c.vpp, c.micro_batch_size,
                         static_cast<int>(c.recompute), c.zero_stage, c.ep, c.etp);
}

}  // namespace

std::string plan_key(const PlanCandidate& c) {
  std::string k = "tp" + std::to_string(c.tp) + "-pp" + std::to_string(c.pp);
  if (c.first_stage_layers) k += "-first" + std::to_string(*c.first_stage_layers);
  if (c.last_stage_layers) k += "-last" + std::to_string(*c.last_stage_layers);
  if (c.account_for_embedding_and_loss) k += "-embloss";
  if (c.layout_with_mtp) k += "-embmtploss";
  k += "-vpp" + std::to_string(c.vpp) + "-cp" + std::to_string(c.cp) + "-mbs" +
       std::to_string(c.micro_batch_size) + "-rc:" + to_string(c.recompute) + "-z" +
       std::to_string(c.zero_stage) + "-gbs" + std::to_string(c.global_batch_size);
  if (c.ep > 0) k += "-ep" + std::to_string(c.ep);
  if (c.ep > 0 && c.etp != c.tp) k += "-etp" + std::to_string(c.etp);
  return k;
}

bool canonical_less(const PlanCandidate& a, const PlanCandidate& b) { return as_tuple(a) < as_tuple(b); }

std::vector<PlanCandidate> enumerate_plans(const JobSpec& base, const PlanSpaceOptions& opts) {
  std::vector<std::int64_t> batches = opts.global_batch_sizes;
  if (batches.empty()) batches.push_back(base.training.global_batch_size);
  std::sort(batches.begin(), batches.end());
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
  std::vector<std::int64_t> micro = opts.micro_batch_sizes;
  std::sort(micro.begin(), micro.end());
  micro.erase(std::unique(micro.begin(), micro.end()), micro.end());
  std::vector<int> cps;
  for (int cp = 1; cp <= std::max(1, opts.max_context_parallel); cp *= 2) cps.push_back(cp);
  const auto layouts = pipeline_layouts(base.model.num_hidden_layers, base.model.num_nextn_predict_layers);
  constexpr Recompute kRecompute[] = {Recompute::None, Recompute::Selective, Recompute::Full};
  // The expert grid of a plan with tensor parallelism `tp`: (EP, ETP) pairs. EP: powers of two
  // dividing the routed experts, up to the GPUs. ETP: as the base job writes it, else the plan's
  // TP and ETP 1. Dense models: one pair (0, 0).
  auto expert_grids = [&base](int tp) {
    std::vector<std::pair<int, int>> grids;
    if (!is_moe(base.model)) {
      grids.emplace_back(0, 0);
      return grids;
    }
    std::vector<int> etps{base.parallel.expert_tensor_parallel_size};
    if (etps.front() == 0) etps = tp > 1 ? std::vector<int>{1, tp} : std::vector<int>{1};
    for (std::int64_t ep = 1; ep <= base.model.moe.num_experts && ep <= base.cluster.num_gpus; ep *= 2) {
      if (base.model.moe.num_experts % ep != 0) continue;
      for (const int etp : etps) grids.emplace_back(static_cast<int>(ep), etp);
    }
    return grids;
  };

  std::vector<PlanCandidate> out;
  for (const auto gbs : batches) {
    for (const int tp : divisors(nvlink_domain_gpus(base.cluster))) {
      const auto grids = expert_grids(tp);
      for (const int cp : cps) {
        for (const auto& layout : layouts) {
          for (const int vpp : layout.vpps) {
            for (const auto mbs : micro) {
              for (const auto rc : kRecompute) {
                for (int zero = 0; zero <= 3; ++zero) {
                  for (const auto& [ep, etp] : grids) {
                    PlanCandidate c;
                    c.global_batch_size = gbs;
                    c.tp = tp;
                    c.cp = cp;
                    c.pp = layout.pp;
                    c.first_stage_layers = layout.first;
                    c.last_stage_layers = layout.last;
                    c.account_for_embedding_and_loss = layout.accounted;
                    c.layout_with_mtp = layout.with_mtp;
                    c.vpp = vpp;
                    c.micro_batch_size = mbs;
                    c.recompute = rc;
                    c.zero_stage = zero;
                    c.ep = ep;
                    c.etp = etp;
                    out.push_back(c);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return out;  // loops run in canonical_less order already
}

const char* plan_rule_key(PlanRule r) {
  switch (r) {
    case PlanRule::GpusDivisibleByModelParallel: return "num_gpus_divisible_by_tp_pp_cp";
    case PlanRule::TpDividesHeads: return "tp_divides_attention_heads";
    case PlanRule::TpDividesKvHeads: return "tp_divides_kv_heads";
    case PlanRule::BatchDivisibleByMicroBatchDp: return "global_batch_divisible_by_micro_batch_dp";
    case PlanRule::VppMicroBatchesDivisibleByPp: return "vpp_micro_batches_divisible_by_pp";
    case PlanRule::SeqDivisibleBy2Cp: return "seq_length_divisible_by_2cp";
    case PlanRule::SeqPerCpDivisibleByTp: return "seq_per_cp_rank_divisible_by_tp";
    case PlanRule::ExpertGridDividesGpus: return "num_gpus_divisible_by_etp_ep_pp";
    case PlanRule::MergedA2aOverlapRules: return "a2a_overlap_megatron_core_rules";
    case PlanRule::Memory: return "memory";
    case PlanRule::CostModelError: return "cost_model_error";
  }
  return "unknown";
}

std::string pipeline_layout_string(const PlanCandidate& c, std::int64_t layers, std::int64_t mtp_layers) {
  if (!c.layout_with_mtp) return "";
  const std::vector<int> n = mtp_layout_layers(layers, mtp_layers, c.pp, c.vpp);
  // Megatron's own spelling: short runs written out ("tt"), longer ones as "t*N".
  const auto ts = [](int k) { return k <= 3 ? std::string(static_cast<std::size_t>(k), 't') : "t*" + std::to_string(k); };
  std::string s = "E" + ts(n.front());
  if (n.size() > 2) {
    const std::string middle = ts(n[1]) + "|";
    s += n.size() == 3 ? "|" + middle : "|(" + middle + ")*" + std::to_string(n.size() - 2);
  } else {
    s += "|";
  }
  s += ts(n.back()) + (mtp_layers == 1 ? std::string("m") : "m*" + std::to_string(mtp_layers)) + "L";
  return s;
}

JobSpec apply_plan(const JobSpec& base, const PlanCandidate& c, bool sequence_parallel) {
  JobSpec job = base;
  auto& p = job.parallel;
  p.tensor_model_parallel_size = c.tp;
  p.pipeline_model_parallel_size = c.pp;
  p.virtual_pipeline_model_parallel_size = c.vpp;
  p.context_parallel_size = c.cp;
  p.decoder_first_pipeline_num_layers = c.first_stage_layers;
  p.decoder_last_pipeline_num_layers = c.last_stage_layers;
  p.account_for_embedding_in_pipeline_split = c.account_for_embedding_and_loss;
  p.account_for_loss_in_pipeline_split = c.account_for_embedding_and_loss;
  p.layout_layers.clear();
  if (c.layout_with_mtp) {
    p.layout_layers = mtp_layout_layers(job.model.num_hidden_layers, job.model.num_nextn_predict_layers, c.pp, c.vpp);
  }
  p.zero_stage = c.zero_stage;
  if (c.ep > 0) p.expert_model_parallel_size = c.ep;
  if (c.etp > 0) p.expert_tensor_parallel_size = c.etp;
  p.sequence_parallel = sequence_parallel && c.tp > 1;  // as config/validate.cpp derives it
  const std::int64_t model_gpus = static_cast<std::int64_t>(c.tp) * c.pp * c.cp;
  p.data_parallel_size = job.cluster.num_gpus / model_gpus;
  job.training.global_batch_size = c.global_batch_size;
  job.training.micro_batch_size = c.micro_batch_size;
  job.training.recompute = c.recompute;
  return job;
}

std::optional<PlanRule> first_broken_rule(const JobSpec& job) {
  const auto& p = job.parallel;
  const auto& t = job.training;
  const std::int64_t tp = p.tensor_model_parallel_size;
  const std::int64_t cp = p.context_parallel_size;
  const std::int64_t model_gpus = tp * p.pipeline_model_parallel_size * cp;
  if (job.cluster.num_gpus % model_gpus != 0) return PlanRule::GpusDivisibleByModelParallel;
  if (job.model.num_attention_heads % tp != 0) return PlanRule::TpDividesHeads;
  if (job.model.num_key_value_heads % tp != 0) return PlanRule::TpDividesKvHeads;
  const std::int64_t per_step = t.micro_batch_size * p.data_parallel_size;
  if (t.global_batch_size % per_step != 0) return PlanRule::BatchDivisibleByMicroBatchDp;
  if (p.virtual_pipeline_model_parallel_size > 1 &&
      (t.global_batch_size / per_step) % p.pipeline_model_parallel_size != 0) {
    return PlanRule::VppMicroBatchesDivisibleByPp;
  }
  if (cp > 1 && t.seq_length % (2 * cp) != 0) return PlanRule::SeqDivisibleBy2Cp;
  if (p.sequence_parallel && (t.seq_length / cp) % tp != 0) return PlanRule::SeqPerCpDivisibleByTp;
  if (is_moe(job.model)) {
    // Megatron-Core's expert grid (config/validate.cpp check_experts).
    const std::int64_t etp = expert_tensor_parallel_size(job);
    const std::int64_t grid = etp * p.expert_model_parallel_size * p.pipeline_model_parallel_size;
    if (job.cluster.num_gpus % grid != 0 || etp > nvlink_domain_gpus(job.cluster) ||
        job.model.moe.expert_intermediate_size % etp != 0 || (tp > 1 && !p.sequence_parallel)) {
      return PlanRule::ExpertGridDividesGpus;
    }
    // pp-first placement with PP > 1: Megatron-Core needs expert DP = DP (validate.cpp).
    if (p.placement == PlacementOrder::PpFirst && p.pipeline_model_parallel_size > 1 &&
        expert_data_parallel_size(job) != p.data_parallel_size) {
      return PlanRule::ExpertGridDividesGpus;
    }
    // The job's 1F1B all-to-all overlap under Megatron-Core's rules (the validator's list).
    if (job.system.overlap_moe_expert_parallel_comm && merged_a2a_overlap_refusal(job) != nullptr) {
      return PlanRule::MergedA2aOverlapRules;
    }
  }
  return std::nullopt;
}

double peak_memory_bytes(const JobSpec& job, const BufferSizes& buffers) {
  return peak_memory_per_gpu(job, buffers).breakdown.total_bytes();
}

}  // namespace megasim
