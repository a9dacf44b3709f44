#include "megasim/report/json_report.hpp"

#include <cmath>
#include <cstdio>
#include <string>

#include "megasim/core/units.hpp"
#include "megasim/core/version.hpp"
#include "megasim/report/human_number.hpp"

namespace megasim {

nlohmann::json breakdown_to_json(const StepBreakdown& b) {
  return nlohmann::json{{"compute", b.compute_s},
                        {"exposed_tp_comm", b.exposed_tp_comm_s},
                        {"exposed_pp_comm", b.exposed_pp_comm_s},
                        {"exposed_dp_comm", b.exposed_dp_comm_s},
                        {"exposed_cp_comm", b.exposed_cp_comm_s},
                        {"exposed_ep_comm", b.exposed_ep_comm_s},
                        {"pipeline_bubble", b.pipeline_bubble_s},
                        {"optimizer", b.optimizer_s},
                        {"data_loading", b.data_loading_s},
                        {"other", b.other_s}};
}

nlohmann::json step_report_to_json(const StepReport& r) {
  nlohmann::json j;
  j["schema_version"] = kSchemaVersion;
  j["megasim_version"] = kVersion;
  j["name"] = r.name;
  j["engine"] = r.engine;
  j["num_gpus"] = r.num_gpus;
  j["step_time_s"] = r.step_time_s;
  j["tokens_per_s"] = r.tokens_per_s;
  j["mfu"] = r.mfu;
  j["hfu"] = r.hfu;
  j["model_tflops_per_gpu"] = r.model_tflops_per_gpu;
  j["model_flops_per_step"] = r.model_flops_per_step;
  j["hardware_flops_per_step"] = r.hardware_flops_per_step;
  j["peak_flops_per_gpu"] = r.peak_flops_per_gpu;
  j["model_parameters"] = r.model_parameters;
  j["model_active_parameters"] = r.model_active_parameters;
  if (r.model_mtp_parameters > 0) j["model_mtp_parameters"] = r.model_mtp_parameters;
  if (r.moe) {
    const MoeSummary& m = *r.moe;
    j["moe"] = {{"ep", m.ep},
                {"etp", m.etp},
                {"edp", m.edp},
                {"dispatcher", m.dispatcher},
                {"routing_cv", m.routing_cv},
                {"max_to_mean_rank_load", m.max_to_mean_rank_load},
                {"max_to_mean_expert_load", m.max_to_mean_expert_load},
                {"dropped_token_fraction", m.dropped_token_fraction},
                {"block_time_s", {{"forward", m.block_forward_s}, {"backward", m.block_backward_s}}},
                {"exchange", {{"priced_by", m.exchange_priced_by},
                              {"groups_simulated", m.exchange_groups_simulated},
                              {"groups_per_stage", m.exchange_groups_per_stage}}}};
  }
  if (r.time_to_train_days) {
    j["time_to_train_days"] = *r.time_to_train_days;
  } else {
    j["time_to_train_days"] = nullptr;
  }
  j["startup_s"] = r.startup_s;
  j["breakdown_s"] = breakdown_to_json(r.breakdown);
  // Not a breakdown_s key: it is part of breakdown_s.other, and breakdown_s adds up to the step.
  j["straggler_s"] = r.breakdown.straggler_s;
  j["layer_time_s"] = {{"forward", r.layer_time.forward_s}, {"backward", r.layer_time.backward_s}};
  j["memory"] = {{"peak_bytes_per_gpu", r.memory.total_bytes()},
                 {"peak_pipeline_stage", r.memory_peak_stage},
                 {"capacity_bytes", r.memory_capacity_bytes},
                 {"fits", r.memory_fits},
                 {"breakdown_bytes",
                  {{"weights", r.memory.weights_bytes},
                   {"gradients", r.memory.gradients_bytes},
                   {"optimizer_states", r.memory.optimizer_states_bytes},
                   {"activations", r.memory.activations_bytes},
                   {"buffers", r.memory.buffers_bytes}}}};
  j["plan"] = {{"tp", r.plan.tp},
               {"pp", r.plan.pp},
               {"vpp", r.plan.vpp},
               {"cp", r.plan.cp},
               {"dp", r.plan.dp},
               {"micro_batches_per_pipeline", r.plan.micro_batches_per_pipeline},
               {"micro_batch_size", r.plan.micro_batch_size},
               {"zero_stage", r.plan.zero_stage},
               {"recompute", r.plan.recompute}};
  if (!r.busiest_links.empty()) {
    nlohmann::json links = nlohmann::json::array();
    for (const auto& l : r.busiest_links) {
      links.push_back({{"link", l.link}, {"bytes", l.bytes}, {"utilization", l.utilization}});
    }
    j["busiest_links"] = links;
  }
  if (r.ecmp) {
    j["ecmp"] = {{"max_flows_per_uplink", r.ecmp->max_flows_per_uplink},
                 {"mean_flows_per_uplink", r.ecmp->mean_flows_per_uplink},
                 {"max_uplink_load_vs_ideal", r.ecmp->max_uplink_load_vs_ideal}};
  }
  return j;
}

namespace {

void line(std::ostream& out, const char* label, const std::string& value) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %-28s %s\n", label, value.c_str());
  out << buf;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

void share(std::ostream& out, const char* label, double part_s, double total_s) {
  char buf[256];
  // Sub-picosecond residuals of the event engine's accounting print as zero, not -0.0000.
  if (std::fabs(part_s) < 1e-9) part_s = 0.0;
  std::snprintf(buf, sizeof buf, "    %-26s %10.4f s  %5.1f%%\n", label, part_s,
                total_s > 0 ? 100.0 * part_s / total_s : 0.0);
  out << buf;
}

}  // namespace

void print_text_report(const StepReport& r, std::ostream& out) {
  out << "megasim " << kVersion << " — " << (r.name.empty() ? "job" : r.name) << " (engine "
      << r.engine << ")\n";
  out << "plan: TP " << r.plan.tp << " · PP " << r.plan.pp << " · VPP " << r.plan.vpp << " · CP "
      << r.plan.cp << " · DP " << r.plan.dp << " on " << r.num_gpus << " GPUs; "
      << r.plan.micro_batches_per_pipeline << " micro-batches of " << r.plan.micro_batch_size
      << " per pipeline; ZeRO-" << r.plan.zero_stage << "; recompute " << r.plan.recompute << "\n";
  line(out, "step time", format_time(r.step_time_s));
  line(out, "throughput", human_number(r.tokens_per_s) + " tokens/s");
  line(out, "MFU", fmt("%.1f%%", 100.0 * r.mfu));
  line(out, "HFU", fmt("%.1f%%", 100.0 * r.hfu));
  line(out, "model TFLOP/s per GPU", fmt("%.1f", r.model_tflops_per_gpu));
  line(out, "model parameters", human_number(r.model_parameters));
  if (r.moe) {
    line(out, "active parameters", human_number(r.model_active_parameters) + " per token");
    line(out, "experts", "EP " + std::to_string(r.moe->ep) + " · ETP " + std::to_string(r.moe->etp) +
                             " · expert DP " + std::to_string(r.moe->edp) + " · " + r.moe->dispatcher +
                             fmt(" dispatch · busiest rank %.2fx the mean", r.moe->max_to_mean_rank_load));
    if (r.moe->dropped_token_fraction > 0) {
      line(out, "dropped tokens", fmt("%.2f%% of routed copies", 100.0 * r.moe->dropped_token_fraction));
    }
    if (r.moe->exchange_priced_by == "fabric" && r.moe->ep > 1) {
      line(out, "EP exchange",
           "flows on the fabric, " + std::to_string(r.moe->exchange_groups_simulated) + " of the stage's " +
               std::to_string(r.moe->exchange_groups_per_stage) + " EP groups at once");
    } else if (r.moe->ep > 1) {
      line(out, "EP exchange", "NCCL's closed-form all-to-all");
    }
  }
  if (r.time_to_train_days) line(out, "time to train", fmt("%.2f days", *r.time_to_train_days));
  if (r.startup_s > 0) {
    line(out, "communicator start-up",
         format_time(r.startup_s) + (r.startup_hint.empty() ? std::string() : " (" + r.startup_hint + ")"));
  }
  out << "  step-time breakdown:\n";
  const double t = r.step_time_s;
  share(out, "compute", r.breakdown.compute_s, t);
  share(out, "exposed TP comm", r.breakdown.exposed_tp_comm_s, t);
  share(out, "exposed PP comm", r.breakdown.exposed_pp_comm_s, t);
  share(out, "exposed DP comm", r.breakdown.exposed_dp_comm_s, t);
  share(out, "exposed CP comm", r.breakdown.exposed_cp_comm_s, t);
  if (r.moe) share(out, "exposed EP comm", r.breakdown.exposed_ep_comm_s, t);
  share(out, "pipeline bubble", r.breakdown.pipeline_bubble_s, t);
  share(out, "optimizer", r.breakdown.optimizer_s, t);
  share(out, "data loading", r.breakdown.data_loading_s, t);
  share(out, "other", r.breakdown.other_s, t);
  if (r.breakdown.straggler_s > 0) share(out, "  of which slow hosts", r.breakdown.straggler_s, t);
  {
    char buf[256];
    std::snprintf(buf, sizeof buf, "  one layer, one micro-batch: forward %.2f ms, backward %.2f ms\n",
                  1e3 * r.layer_time.forward_s, 1e3 * r.layer_time.backward_s);
    out << buf;
  }
  out << "  memory per GPU: " << format_bytes(r.memory.total_bytes()) << " of "
      << format_bytes(r.memory_capacity_bytes) << (r.memory_fits ? " (fits)" : " (DOES NOT FIT)")
      << ", peak on pipeline stage " << r.memory_peak_stage << "\n";
  out << "    weights " << format_bytes(r.memory.weights_bytes) << ", gradients "
      << format_bytes(r.memory.gradients_bytes) << ", optimizer states "
      << format_bytes(r.memory.optimizer_states_bytes) << ", activations "
      << format_bytes(r.memory.activations_bytes) << ", buffers "
      << format_bytes(r.memory.buffers_bytes) << "\n";
  if (!r.busiest_links.empty()) {
    out << "  busiest links:\n";
    for (const auto& l : r.busiest_links) {
      out << "    " << l.link << "  " << format_bytes(l.bytes) << "  "
          << fmt("%.1f%% busy", 100.0 * l.utilization) << "\n";
    }
  }
  if (r.ecmp) {
    out << "  ECMP: max " << fmt("%.0f", r.ecmp->max_flows_per_uplink) << " / mean "
        << fmt("%.2f", r.ecmp->mean_flows_per_uplink) << " flows per uplink; busiest uplink x"
        << fmt("%.3f", r.ecmp->max_uplink_load_vs_ideal) << " vs ideal spraying\n";
  }
}

}  // namespace megasim
