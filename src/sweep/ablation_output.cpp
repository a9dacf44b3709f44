// Text and JSON forms of `megasim ablate` (the rows of run_ablation, base first).
#include <cstdio>
#include <string>

#include "megasim/core/units.hpp"
#include "megasim/core/version.hpp"
#include "megasim/sweep/ablation.hpp"

namespace megasim {

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

}  // namespace

double delta_mfu_points(const Ablation& a, const AblationRow& row) {
  return row.report ? 100.0 * (row.report->mfu - a.base.mfu) : 0.0;
}

double delta_tokens_per_s_percent(const Ablation& a, const AblationRow& row) {
  if (!row.report || a.base.tokens_per_s <= 0) return 0.0;
  return 100.0 * (row.report->tokens_per_s / a.base.tokens_per_s - 1.0);
}

void write_ablation_text(const Ablation& a, std::ostream& out) {
  const StepReport& b = a.base;
  out << "ablate: " << b.name << " on " << b.num_gpus << " GPUs (engine " << b.engine
      << "), one switch flipped per row\n";
  char line[512];
  std::snprintf(line, sizeof line, "  base: step %s, MFU %.1f%%, start-up %s%s\n", format_time(b.step_time_s).c_str(),
                100.0 * b.mfu, format_time(b.startup_s).c_str(), b.memory_fits ? "" : " (does not fit)");
  out << line;
  std::snprintf(line, sizeof line, "  %-38s %-44s %11s %6s %11s %12s %11s\n", "technique", "change", "step time",
                "MFU", "MFU (pts)", "tokens/s (%)", "start-up");
  out << line;
  for (const AblationRow& r : a.rows) {
    const std::string change = r.flip.from + " -> " + r.flip.to;
    if (!r.report) {
      std::snprintf(line, sizeof line, "  %-38s %-44s invalid: ", r.flip.technique.c_str(), change.c_str());
      out << line << r.error << "\n";
      continue;
    }
    const StepReport& s = *r.report;
    std::snprintf(line, sizeof line, "  %-38s %-44s %11s %5.1f%% %+11.2f %+12.1f %11s%s\n", r.flip.technique.c_str(),
                  change.c_str(), format_time(s.step_time_s).c_str(), 100.0 * s.mfu, delta_mfu_points(a, r),
                  delta_tokens_per_s_percent(a, r), format_time(s.startup_s).c_str(),
                  s.memory_fits ? "" : "  (does not fit)");
    out << line;
  }
}

nlohmann::json ablation_to_json(const Ablation& a) {
  nlohmann::json rows = nlohmann::json::array();
  for (const AblationRow& r : a.rows) {
    nlohmann::json j{{"technique", r.flip.technique}, {"set", join(r.flip.sets)}, {"from", r.flip.from},
                     {"to", r.flip.to}};
    if (r.report) {
      j["step_time_s"] = r.report->step_time_s;
      j["mfu"] = r.report->mfu;
      j["delta_mfu_points"] = delta_mfu_points(a, r);
      j["tokens_per_s"] = r.report->tokens_per_s;
      j["delta_tokens_per_s_pct"] = delta_tokens_per_s_percent(a, r);
      j["startup_s"] = r.report->startup_s;
      j["fits"] = r.report->memory_fits;
      j["error"] = nullptr;
    } else {
      j["error"] = r.error;
    }
    rows.push_back(j);
  }
  return {{"schema_version", kSchemaVersion},
          {"megasim_version", kVersion},
          {"name", a.base.name},
          {"engine", a.base.engine},
          {"num_gpus", a.base.num_gpus},
          {"base",
           {{"step_time_s", a.base.step_time_s},
            {"mfu", a.base.mfu},
            {"tokens_per_s", a.base.tokens_per_s},
            {"startup_s", a.base.startup_s},
            {"fits", a.base.memory_fits}}},
          {"rows", rows}};
}

}  // namespace megasim
