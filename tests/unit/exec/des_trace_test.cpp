#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "des_test_support.hpp"
#include "megasim/exec/des_step.hpp"
#include "megasim/net/topology_builders.hpp"

namespace megasim {
namespace {

TEST(DesTrace, ValidChromeTraceJson) {
  JobSpec j = destest::job(8, 2, 1, 32);
  j.parallel.zero_stage = 2;
  StepCosts c = destest::costs(j, 4, 2e-3, 4e-3);
  c.p2p_bytes = 10e6;
  c.dp_grad_reduce_bytes = 100e6;
  c.dp_param_gather_bytes = 100e6;
  DesOptions o;
  o.trace_path = (std::filesystem::path(::testing::TempDir()) / "des_trace_test.json").string();
  const Fabric f = build_fabric(j.cluster);
  const StepReport r = simulate_step_des(j, c, f, destest::nccl(), o);
  std::ifstream in(o.trace_path);
  ASSERT_TRUE(in.good());
  const nlohmann::json doc = nlohmann::json::parse(in);  // throws on invalid JSON
  ASSERT_TRUE(doc.contains("traceEvents"));
  const auto& ev = doc["traceEvents"];
  ASSERT_TRUE(ev.is_array());
  std::set<std::string> phases;
  std::set<std::pair<int, int>> tracks;
  double last_end_us = 0;
  for (const auto& e : ev) {
    ASSERT_TRUE(e.contains("ph"));
    ASSERT_TRUE(e.contains("pid"));
    const std::string ph = e["ph"];
    phases.insert(ph);
    if (ph == "X") {
      ASSERT_TRUE(e["ts"].is_number());
      ASSERT_TRUE(e["dur"].is_number());
      EXPECT_GE(e["dur"].get<double>(), 0);
      tracks.insert({e["pid"].get<int>(), e["tid"].get<int>()});
      last_end_us = std::max(last_end_us, e["ts"].get<double>() + e["dur"].get<double>());
    }
    if (ph == "C") {
      ASSERT_TRUE(e["args"].contains("utilization"));
      EXPECT_LE(e["args"]["utilization"].get<double>(), 1.0 + 1e-9);
    }
  }
  EXPECT_TRUE(phases.count("X"));
  EXPECT_TRUE(phases.count("C"));
  EXPECT_TRUE(phases.count("M"));
  EXPECT_GE(tracks.size(), 4U);  // compute + dp on both stages at least
  EXPECT_NEAR(last_end_us * 1e-6, r.step_time_s, 1e-6);
  std::filesystem::remove(o.trace_path);
}

TEST(DesTrace, UnwritablePathIsInputError) {
  const JobSpec j = destest::job(2, 4, 1, 8);
  DesOptions o;
  o.trace_path = "/nonexistent-dir/x/trace.json";
  const Fabric f = build_fabric(j.cluster);
  EXPECT_THROW(simulate_step_des(j, destest::costs(j, 4, 1e-3, 2e-3), f, destest::nccl(), o),
               std::exception);
}

}  // namespace
}  // namespace megasim
