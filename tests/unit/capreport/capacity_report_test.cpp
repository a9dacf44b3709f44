#include "megasim/catalogs/reliability_reader.hpp"
#include "megasim/capreport/capacity_report.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "capreport/fake_simulate.hpp"
#include "megasim/core/error.hpp"

namespace megasim {
namespace {

ReliabilityCatalog catalog() {
  return load_reliability_catalog(std::filesystem::path(MEGASIM_SOURCE_DIR) / "configs/reliability");
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// 6144 sequences, TP8 PP8: DP sizes in [48, 192] dividing 6144 are 48, 64, 96, 128, 192.
TEST(CapacityReport, GpuCountsPreferDpDividingTheBatch) {
  auto j = testing::fake_job();
  j.training.global_batch_size = 6144;
  EXPECT_EQ(capacity_gpu_counts(j, 3072, 12288, 10),
            (std::vector<std::int64_t>{3072, 4096, 6144, 8192, 12288}));
  const auto thin = capacity_gpu_counts(j, 3072, 12288, 3);
  ASSERT_EQ(thin.size(), 3u);
  EXPECT_EQ(thin.front(), 3072);
  EXPECT_EQ(thin.back(), 12288);
  EXPECT_THROW(capacity_gpu_counts(j, 10, 60, 5), InputError);  // no multiple of 64
  EXPECT_THROW(capacity_gpu_counts(j, 100, 50, 5), InputError);
}

// Textbook: 512 GPUs -> DP 8: step = 100/8 + 0.5 + 0.2 = 13.2 s; tokens/s = 768 x 2048 / 13.2
// = 119,156; 300e9 tokens -> 2,517,713 s = 29.14 days (+ start-up, a few seconds).
TEST(CapacityReport, TextbookIdealTimeAndSkippedPoints) {
  const auto j = testing::fake_job();
  CapacityOptions o;
  o.gpus_min = 128;
  o.gpus_max = 4096;
  o.mc_trials = 50;
  o.max_points = 20;
  // Force a DP that does not divide 768 into the sweep by using a non-divisor-friendly batch.
  auto odd = j;
  odd.training.global_batch_size = 768;
  const auto rep = build_capacity_report(odd, testing::fake_simulate, catalog(), o);
  bool saw512 = false;
  for (const auto& p : rep.points) {
    if (p.num_gpus != 512) continue;
    saw512 = true;
    ASSERT_TRUE(p.ok);
    EXPECT_NEAR(p.step.step_time_s, 13.2, 1e-12);
    EXPECT_NEAR(p.ideal_days, 300e9 / (768.0 * 2048 / 13.2) / 86400 + p.startup_s / 86400, 1e-9);
    EXPECT_NEAR(p.ideal_days, 29.14, 0.01);
    EXPECT_GT(p.expected_days, p.ideal_days);
    EXPECT_NEAR(p.ideal_cost, p.ideal_days * 24 * 512 * 2.0, 1e-6);
    EXPECT_GT(p.startup_s, 0);
    EXPECT_LT(p.startup_s, 5);
  }
  EXPECT_TRUE(saw512);
  EXPECT_TRUE(rep.has_focus);
  EXPECT_EQ(rep.points[rep.focus].num_gpus, 512);  // the job's own count
}

TEST(CapacityReport, FailingPointsAreKeptAsSkippedWithTheReason) {
  auto j = testing::fake_job();
  const SimulateFn picky = [](const JobSpec& job) {
    if (job.cluster.num_gpus == 1024) throw InputError("cluster.num_gpus", "too many for the test");
    return testing::fake_simulate(job);
  };
  CapacityOptions o;
  o.gpus_min = 512;
  o.gpus_max = 2048;
  o.mc_trials = 10;
  const auto rep = build_capacity_report(j, picky, catalog(), o);
  // DP 8..32 dividing 768: 8, 12, 16, 24, 32 -> 512, 768, 1024, 1536, 2048 GPUs.
  ASSERT_EQ(rep.points.size(), 5u);
  EXPECT_EQ(rep.points[2].num_gpus, 1024);
  EXPECT_FALSE(rep.points[2].ok);
  EXPECT_NE(rep.points[2].skip_reason.find("too many"), std::string::npos);
  EXPECT_TRUE(rep.points[3].ok);
  const auto dir = std::filesystem::temp_directory_path() / "megasim_capreport_skip";
  std::filesystem::remove_all(dir);
  write_capacity_report(rep, dir);
  EXPECT_NE(slurp(dir / "report.html").find("too many for the test"), std::string::npos);
  EXPECT_NE(slurp(dir / "report.md").find("Skipped GPU counts"), std::string::npos);
}

TEST(CapacityReport, WritesSelfContainedHtmlMarkdownAndCsvsDeterministically) {
  const auto j = testing::fake_job();
  CapacityOptions o;
  o.gpus_min = 128;
  o.gpus_max = 4096;
  o.mc_trials = 100;
  o.seed = 3;
  const auto rep = build_capacity_report(j, testing::fake_simulate, catalog(), o);
  const auto base = std::filesystem::temp_directory_path() / "megasim_capreport_test";
  std::filesystem::remove_all(base);
  const auto files = write_capacity_report(rep, base / "a");
  write_capacity_report(build_capacity_report(j, testing::fake_simulate, catalog(), o), base / "b");
  ASSERT_EQ(files.size(), 9u);
  for (const auto& f : files) {
    EXPECT_TRUE(std::filesystem::exists(f)) << f;
    EXPECT_EQ(slurp(f), slurp(base / "b" / f.filename())) << "not deterministic: " << f.filename();
  }
  const std::string html = slurp(base / "a" / "report.html");
  for (const char* id : {"chart-mfu", "chart-tokens", "chart-breakdown", "chart-memory", "chart-ttt",
                         "chart-cost", "chart-ettr", "chart-goodput"}) {
    EXPECT_NE(html.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  }
  // Self-contained: no external resources of any kind.
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  const std::string csv = slurp(base / "a" / "scaling.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "gpus,mfu,tokens_per_s,step_time_s,model_tflops_per_gpu");
  const std::string mem = slurp(base / "a" / "memory.csv");
  EXPECT_EQ(mem.substr(0, mem.find('\n')),
            "gpus,weights_GiB,gradients_GiB,optimizer_states_GiB,activations_GiB,buffers_GiB,capacity_GiB,fits,"
            "peak_pipeline_stage");
  const std::string brk = slurp(base / "a" / "step_breakdown.csv");
  EXPECT_EQ(brk.substr(0, brk.find('\n')),
            "gpus,compute_s,exposed_tp_comm_s,exposed_pp_comm_s,exposed_dp_comm_s,exposed_cp_comm_s,"
            "pipeline_bubble_s,optimizer_s,data_loading_s,other_s,of_which_straggler_s");
  const std::string md = slurp(base / "a" / "report.md");
  EXPECT_NE(md.find("## Assumptions and sources"), std::string::npos);
  // People read human units; the CSV behind each table keeps the numbers as computed.
  EXPECT_NE(md.find(" tokens/s |"), std::string::npos);
  for (const std::string* page : {&md, &html}) {
    EXPECT_EQ(page->find("e+0"), std::string::npos) << "scientific notation in a page for people";
    EXPECT_EQ(page->find("e+1"), std::string::npos) << "scientific notation in a page for people";
  }
  EXPECT_NE(csv.find(",119156,"), std::string::npos) << "the CSV keeps the number: 768 x 2048 / 13.2 tokens/s\n" << csv;
  EXPECT_NE(md.find("Llama 3"), std::string::npos);
}

TEST(CapacityReport, BadOptions) {
  const auto j = testing::fake_job();
  CapacityOptions o;
  o.train_tokens = -1;
  EXPECT_THROW(build_capacity_report(j, testing::fake_simulate, catalog(), o), InputError);
  o = {};
  o.gpu_hour_price = -2;
  EXPECT_THROW(build_capacity_report(j, testing::fake_simulate, catalog(), o), InputError);
}

}  // namespace
}  // namespace megasim
