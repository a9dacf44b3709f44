#include "megasim/catalogs/reliability_reader.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "megasim/core/error.hpp"

namespace megasim {
namespace {

std::filesystem::path dir() { return std::filesystem::path(MEGASIM_SOURCE_DIR) / "configs/reliability"; }

const FailureClass& find(const ReliabilityCatalog& c, const std::string& name) {
  for (const auto& f : c.failure_classes) {
    if (f.name == name) return f;
  }
  throw std::runtime_error("no class " + name);
}

// Textbook: faulty GPU, 148 interruptions over 16,384 GPUs x 54 days x 24 h = 21,233,664
// GPU-hours -> 6.970e-6 per GPU-hour.
TEST(Reliability, CountsBecomeRatesPerUnitHourTextbook) {
  const auto c = load_reliability_catalog(dir());
  EXPECT_NEAR(find(c, "faulty_gpu").rate_per_unit_hour, 148.0 / 21233664.0, 1e-12);
  // Host maintenance is per node: 32 / (2,048 x 1,296 h).
  EXPECT_NEAR(find(c, "host_maintenance_unplanned").rate_per_unit_hour, 32.0 / 2654208.0, 1e-12);
  EXPECT_EQ(find(c, "planned").detection, DetectionKind::Planned);
  EXPECT_EQ(find(c, "nccl_watchdog_timeout").detection, DetectionKind::Hang);
  EXPECT_EQ(c.failure_classes.size(), 19u);
  EXPECT_DOUBLE_EQ(c.recovery.collective_timeout_s, 600.0);
  EXPECT_DOUBLE_EQ(c.checkpoint.interval_s, 0.0);  // auto
  EXPECT_FALSE(c.sources.empty());
}

TEST(Reliability, OverridesMergeAndBareValuesAreAccepted) {
  const auto o = nlohmann::json::parse(R"({
    "failure_classes": {"faulty_gpu": {"rate_per_unit_hour": 1e-5}, "cpu": null},
    "checkpoint": {"interval": "30min"},
    "recovery": {"diagnostics": "1min"}})");
  const auto c = load_reliability_catalog(dir(), &o);
  EXPECT_DOUBLE_EQ(find(c, "faulty_gpu").rate_per_unit_hour, 1e-5);
  EXPECT_EQ(c.failure_classes.size(), 18u);
  EXPECT_DOUBLE_EQ(c.checkpoint.interval_s, 1800.0);
  EXPECT_DOUBLE_EQ(c.recovery.diagnostics_s, 60.0);
}

TEST(Reliability, BadOverridesNameTheField) {
  auto expect_path = [](const char* text, const std::string& path) {
    const auto o = nlohmann::json::parse(text);
    try {
      load_reliability_catalog(dir(), &o);
      FAIL() << "no error for " << text;
    } catch (const InputError& e) {
      EXPECT_EQ(e.path(), path);
    }
  };
  expect_path(R"({"recovery": {"diagnostics": 60}})", "reliability.recovery.diagnostics");
  expect_path(R"({"recovery": {"diagnosis": "1min"}})", "reliability.recovery.diagnosis");
  expect_path(R"({"checkpoint": {"interval": "soon"}})", "reliability.checkpoint.interval");
  expect_path(R"({"failure_classes": {"gpu": {"scope": "rack", "count": 1}}})",
              "reliability.failure_classes.gpu.scope");
  expect_path(R"({"stragglers": {"slow_host_fraction": 2}})", "reliability.stragglers.slow_host_fraction");
}

}  // namespace
}  // namespace megasim
