// Text table and JSON of a plan search (the `megasim plan` output).
#include <cstdio>
#include <string>

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
  plan["decoder_first_pipeline_num_layers"] =
      p.plan.first_stage_layers ? nlohmann::json(*p.plan.first_stage_layers) : nlohmann::json(nullptr);
  plan["decoder_last_pipeline_num_layers"] =
      p.plan.last_stage_layers ? nlohmann::json(*p.plan.last_stage_layers) : nlohmann::json(nullptr);
  return {{"rank", rank},
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
  return {{"schema_version", 1},
          {"objective", r.objective},
          {"num_gpus", r.num_gpus},
          {"candidates_total", r.candidates_total},
          {"valid", r.valid},
          {"rejected", rejected},
          {"first_cost_model_error", r.first_cost_model_error.empty() ? nlohmann::json(nullptr)
                                                                      : nlohmann::json(r.first_cost_model_error)},
          {"ranked", ranked},
          {"best", ranked.empty() ? nlohmann::json(nullptr) : ranked.front()}};
}

void print_plan_table(const PlanSearchResult& r, std::ostream& out) {
  out << "plan search on " << r.num_gpus << " GPUs, objective " << r.objective << ": "
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
