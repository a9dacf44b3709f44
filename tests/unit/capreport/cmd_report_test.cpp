// The `megasim report` CLI glue, driven in-process with a fake simulator.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <functional>
#include <sstream>

#include "capreport/fake_simulate.hpp"
#include "cli_context.hpp"
#include "megasim/core/error.hpp"

namespace megasim {
void register_report_command(CLI::App& app, CliContext& ctx,
                             std::function<StepReport(const JobSpec&)> simulate);
namespace {

struct Harness {
  std::ostringstream out, err;
  CliContext ctx{std::filesystem::path(MEGASIM_SOURCE_DIR) / "configs", out, err,
                 [](const std::string&, const std::vector<std::string>&) { return testing::fake_job(); }, 0, {}};
  CLI::App app{"test"};
  Harness() { register_report_command(app, ctx, testing::fake_simulate); }
  void run(std::vector<std::string> args) {
    args.insert(args.begin(), "report");
    std::reverse(args.begin(), args.end());  // CLI11 takes a reversed vector
    app.parse(args);
  }
};

TEST(CmdReport, WritesTheReportFiles) {
  const auto dir = std::filesystem::temp_directory_path() / "megasim_cmd_report";
  std::filesystem::remove_all(dir);
  Harness h;
  h.run({"job.json", "--gpus-range", "256:1024", "--tokens", "300B", "--trials", "20", "--seed", "4",
         "--out", dir.string()});
  EXPECT_TRUE(std::filesystem::exists(dir / "report.html"));
  EXPECT_TRUE(std::filesystem::exists(dir / "report.md"));
  EXPECT_TRUE(std::filesystem::exists(dir / "plan.csv"));
  EXPECT_NE(h.out.str().find("report.html"), std::string::npos);
}

TEST(CmdReport, BadFlagsAreInputErrorsNamingTheFlag) {
  auto expect_flag = [](std::vector<std::string> args, const std::string& flag) {
    Harness h;
    try {
      h.run(args);
      FAIL() << "no error for " << flag;
    } catch (const InputError& e) {
      EXPECT_EQ(e.path(), flag);
    }
  };
  expect_flag({"job.json", "--gpus-range", "1024"}, "--gpus-range");
  expect_flag({"job.json", "--gpus-range", "2048:1024"}, "--gpus-range");
  expect_flag({"job.json", "--tokens", "lots"}, "--tokens");
  expect_flag({"job.json", "--tokens", "3Q"}, "--tokens");
  expect_flag({"job.json", "--gpu-hour-price", "-1"}, "--gpu-hour-price");
  expect_flag({"job.json", "--reliability", "/nonexistent.json"}, "--reliability");
}

}  // namespace
}  // namespace megasim
