// Text table and JSON of a plan search (the `megasim plan` output).
#include <cstdio>
#include <string>

#include "megasim/core/version.hpp"
#include "megasim/report/json_report.hpp"
#include "megasim/sweep/plan_search.hpp"

namespace megasim {

namespace {

nlohmann::json ranked_json(const RankedPlan& p, std::size_t rank) {
  nlohmann::json plan = {{"key", p.key},
                         {"tp", p.plan.tp},
                         {"pp", p.plan.pp},
                         {"vpp", p.plan.vpp},
                         {"cp", p.plan.cp},
                         {"dp", p.dp},
                         {"micro_batch_size", p.plan.micro_batch_size},
                         {"micro_batches_per_pipeline", p.micro_batches_per_pipeline},
                         {"global_batch_size", p.plan.global_batch_size},
                         {"recompute", to_string(p.plan.recompute)},
                         {"zero_stage", p.plan.zero_stage}};
  if (p.plan.ep > 0) plan["expert_model_parallel_size"] = p.plan.ep;
  if (p.plan.etp > 0) plan["expert_tensor_parallel_size"] = p.plan.etp;
  plan["decoder_first_pipeline_num_layers"] =
      p.plan.first_stage_layers ? nlohmann::json(*p.plan.first_stage_layers) : nlohmann::json(nullptr);
  plan["decoder_last_pipeline_num_layers"] =
      p.plan.last_stage_layers ? nlohmann::json(*p.plan.last_stage_layers) : nlohmann::json(nullptr);
  plan["account_for_embedding_in_pipeline_split"] = p.plan.account_for_embedding_and_loss;
  plan["account_for_loss_in_pipeline_split"] = p.plan.account_for_embedding_and_loss;
  plan["pipeline_model_parallel_layout"] =
      p.plan.layout_with_mtp ? nlohmann::json(p.pipeline_layout) : nlohmann::json(nullptr);
  return {{"rank", rank},
          {"alternatives", p.alternatives},
          {"plan", plan},
          {"engine", p.engine},
          {"step_time_s", p.step_time_s},
          {"mfu", p.mfu},
          {"tokens_per_s_per_gpu", p.tokens_per_s_per_gpu},
          {"peak_memory_bytes_per_gpu", p.peak_memory_bytes},
          {"dominant_exposed_cost", {{"name", p.dominant_cost}, {"time_s", p.dominant_cost_s}}},
          {"breakdown_s", breakdown_to_json(p.breakdown)},
          {"analytic_rank", p.analytic_rank},
          {"analytic_step_time_s", p.analytic_step_time_s}};
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

nlohmann::json plan_search_to_json(const PlanSearchResult& r) {
  nlohmann::json rejected = nlohmann::json::object();
  for (const auto& [rule, count] : r.rejected) {
    if (rule == plan_rule_key(PlanRule::Memory)) {
      rejected[rule] = {{"count", count},
                        {"smallest_overshoot_bytes", r.smallest_memory_overshoot_bytes
                                                         ? nlohmann::json(*r.smallest_memory_overshoot_bytes)
                                                         : nlohmann::json(nullptr)}};
    } else {
      rejected[rule] = count;
    }
  }
  nlohmann::json ranked = nlohmann::json::array();
  for (std::size_t i = 0; i < r.ranked.size(); ++i) ranked.push_back(ranked_json(r.ranked[i], i + 1));
  return {{"schema_version", kSchemaVersion},
          {"objective", r.objective},
          {"num_gpus", r.num_gpus},
          {"num_gpus_used", r.num_gpus_used},
          {"nearest_gpu_counts", r.nearest_gpu_counts},
          {"candidates_total", r.candidates_total},
          {"valid", r.valid},
          {"rejected", rejected},
          {"first_cost_model_error", r.first_cost_model_error.empty() ? nlohmann::json(nullptr)
                                                                      : nlohmann::json(r.first_cost_model_error)},
          {"ranked", ranked},
          {"best", ranked.empty() ? nlohmann::json(nullptr) : ranked.front()}};
}

void print_plan_table(const PlanSearchResult& r, std::ostream& out) {
  if (r.num_gpus_used != r.num_gpus) {
    out << "no plan runs on exactly " << r.num_gpus << " GPUs; planning on " << r.num_gpus_used
        << ", the largest smaller count that admits one\n";
  }
  if (!r.nearest_gpu_counts.empty()) {
    out << "nearest GPU counts that admit a plan:";
    for (const auto n : r.nearest_gpu_counts) out << " " << n;
    out << "\n";
  }
  out << "plan search on " << r.num_gpus_used << " GPUs, objective " << r.objective << ": "
      << r.candidates_total << " candidates, " << r.valid << " valid\n\n";
  if (r.ranked.empty()) {
    out << (r.valid == 0 ? "no valid plan\n" : "(--top 0: no plan shown)\n");
  } else {
    char line[256];
    std::snprintf(line, sizeof line, "%-4s %-56s %-8s %10s %7s %12s %10s  %s\n", "rank", "plan", "engine",
                  "step_s", "MFU", "tok/s/GPU", "mem_GiB", "dominant exposed cost");
    out << line;
    for (std::size_t i = 0; i < r.ranked.size(); ++i) {
      const RankedPlan& p = r.ranked[i];
      std::snprintf(line, sizeof line, "%-4zu %-56s %-8s %10.4f %6.1f%% %12.1f %10.2f  %s %.3f s\n", i + 1,
                    p.key.c_str(), p.engine.c_str(), p.step_time_s, 100.0 * p.mfu, p.tokens_per_s_per_gpu,
                    p.peak_memory_bytes / (1024.0 * 1024.0 * 1024.0), p.dominant_cost.c_str(),
                    p.dominant_cost_s);
      out << line;
      if (!p.pipeline_layout.empty()) out << "     pipeline_model_parallel_layout: " << p.pipeline_layout << "\n";
      if (!p.alternatives.empty()) {
        out << "     same figures:";
        for (const auto& k : p.alternatives) out << " " << k;
        out << "\n";
      }
    }
  }
  out << "\nrejected:\n";
  for (const auto& [rule, count] : r.rejected) {
    out << "  " << rule << ": " << count;
    if (rule == plan_rule_key(PlanRule::Memory) && r.smallest_memory_overshoot_bytes) {
      out << " (smallest overshoot " << fmt("%.2f", *r.smallest_memory_overshoot_bytes / (1024.0 * 1024.0 * 1024.0))
          << " GiB)";
    }
    out << "\n";
  }
  if (!r.first_cost_model_error.empty()) out << "first cost model error: " << r.first_cost_model_error << "\n";
}

}  // namespace megasim
