#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "megasim/core/error.hpp"
#include "megasim/sweep/sweep_run.hpp"
#include "sweep/sweep_test_util.hpp"

namespace megasim {
namespace {

// Grid of 3 x 2 = 6 points; num_gpus=12 is not a whole number of 8-GPU nodes, so two points
// are invalid and must come back as rows with an error (whose text holds commas or quotes).
SweepOptions grid_options() {
  SweepOptions o;
  o.vary = {parse_vary("cluster.num_gpus=8,12,16"), parse_vary("system.preset=megatron-lm,megascale")};
  o.engine = EngineKind::Analytic;
  o.jobs = 2;
  return o;
}

SweepJobLoader loader(const Catalog& cat) {
  return [&cat](const std::vector<std::string>& sets) {
    return testing::load_with(cat, testing::small_job_json(), sets);
  };
}

std::string csv_of(const SweepTable& t) {
  std::ostringstream s;
  write_csv(t, s);
  return s.str();
}

std::string json_of(const SweepTable& t) {
  std::ostringstream s;
  write_json(t, s);
  return s.str();
}

TEST(SweepTable, RowsForValidAndInvalidPoints) {
  const auto cat = testing::test_catalog();
  const SweepTable t = run_sweep(loader(cat), cat, grid_options());
  ASSERT_EQ(t.rows.size(), 6u);
  EXPECT_EQ(t.columns[2], "set.cluster.num_gpus");
  EXPECT_EQ(t.columns.back(), "error");
  const auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(t.columns.begin(), t.columns.end(), name) - t.columns.begin());
  };
  ASSERT_LT(col("step_time_s"), t.columns.size());
  ASSERT_LT(col("breakdown_s.pipeline_bubble"), t.columns.size());
  ASSERT_LT(col("memory.peak_pipeline_stage"), t.columns.size());
  ASSERT_EQ(col("straggler_s"), col("breakdown_s.other") + 1);  // beside the total it is part of
  for (const auto& r : t.rows) {
    const bool invalid = r.cells[2] == "12";
    EXPECT_EQ(r.cells.back().empty(), !invalid) << r.cells.back();
    EXPECT_EQ(r.cells[col("step_time_s")].empty(), invalid);
    if (invalid) continue;
    // The stage that needs the most memory is a 0-based index below the pipeline depth.
    const int stage = std::stoi(r.cells[col("memory.peak_pipeline_stage")]);
    EXPECT_GE(stage, 0);
    EXPECT_LT(stage, std::stoi(r.cells[col("plan.pp")]));
  }
  EXPECT_NE(t.rows[2].cells.back().find("cluster.num_gpus"), std::string::npos);
}

TEST(SweepTable, ShardedAndMergedEqualsUnshardedByteForByte) {
  const auto cat = testing::test_catalog();
  SweepOptions o = grid_options();
  const SweepTable whole = run_sweep(loader(cat), cat, o);
  std::vector<SweepTable> from_csv, from_json;
  for (std::size_t i = 0; i < 4; ++i) {  // 4 shards of 6 points: sizes 2, 2, 1, 1
    o.shard = {i, 4};
    o.jobs = 1;
    const SweepTable part = run_sweep(loader(cat), cat, o);
    std::istringstream c(csv_of(part)), j(json_of(part));
    from_csv.push_back(read_table(c, "csv"));
    from_json.push_back(read_table(j, "json"));
  }
  EXPECT_EQ(csv_of(merge_tables(from_csv)), csv_of(whole));
  EXPECT_EQ(json_of(merge_tables(from_json)), json_of(whole));
  // A missing shard or a shard given twice is an error, not a silently short table.
  std::vector<SweepTable> missing(from_csv.begin(), from_csv.end() - 1);
  EXPECT_THROW(merge_tables(missing), InputError);
  std::vector<SweepTable> twice = from_csv;
  twice.push_back(from_csv[0]);
  EXPECT_THROW(merge_tables(twice), InputError);
}

TEST(SweepTable, CsvQuotingRoundTrips) {
  SweepTable t;
  t.points_total = 1;
  t.columns = {"point", "points_total", "error"};
  t.rows.push_back({0, {"0", "1", "a, \"b\"\nc"}});
  const std::string csv = csv_of(t);
  EXPECT_EQ(csv, "point,points_total,error\n0,1,\"a, \"\"b\"\"\nc\"\n");
  std::istringstream in(csv);
  EXPECT_EQ(csv_of(read_csv(in, "x")), csv);
}

}  // namespace
}  // namespace megasim
