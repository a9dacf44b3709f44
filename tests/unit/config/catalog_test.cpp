#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "config/test_util.hpp"

namespace megasim {
namespace {

TEST(Catalog, ListsRequiredGpusSorted) {
  const auto names = test::catalog().names("gpus");
  const std::vector<std::string> want{"a100-sxm4-40gb", "a100-sxm4-80gb", "a800-sxm4-80gb", "b200-sxm-180gb",
                                      "b300-sxm-288gb", "gb200-186gb",    "gb300-288gb",    "h100-sxm5-80gb",
                                      "h200-sxm-141gb", "h800-sxm5-80gb"};
  EXPECT_EQ(names, want);
}

TEST(Catalog, UnderscoreFilesAreReadableButNotListed) {
  const auto cat = test::catalog();
  const auto names = cat.names("clusters");
  EXPECT_EQ(std::count(names.begin(), names.end(), "_network-defaults"), 0);
  EXPECT_TRUE(cat.entry("clusters", "_network-defaults", "x").is_object());
  EXPECT_NE(std::find(names.begin(), names.end(), "megascale-a100-clos"), names.end());
}

TEST(Catalog, UnknownNameListsValidOnes) {
  EXPECT_INPUT_ERROR(test::catalog().entry("gpus", "a100", "cluster.gpu"), "cluster.gpu",
                     "unknown gpu \"a100\"; valid: a100-sxm4-40gb, a100-sxm4-80gb,");
  EXPECT_INPUT_ERROR(test::catalog().entry("models", "../gpus/a100-sxm4-80gb", "model"), "model",
                     "unknown model");
}

TEST(Catalog, OtherKindsWorkForOtherModules) {
  const auto root = std::filesystem::path(::testing::TempDir()) / "megasim-catalog-kinds";
  std::filesystem::create_directories(root / "hw");
  std::filesystem::create_directories(root / "nccl");
  std::ofstream(root / "hw" / "ampere.json") << R"({"gemm_efficiency": 0.8})";
  std::ofstream(root / "nccl" / "v2.21.json") << R"({"base_latency_us": 6.6})";
  const auto cat = Catalog::open(root);
  EXPECT_DOUBLE_EQ(cat.entry("hw", "ampere", "hw").at("gemm_efficiency").get<double>(), 0.8);
  EXPECT_EQ(cat.names("nccl"), std::vector<std::string>{"v2.21"});
  EXPECT_TRUE(cat.names("models").empty());
  EXPECT_INPUT_ERROR(cat.entry("hw", "hopper", "cluster.gpu.profile"), "cluster.gpu.profile",
                     "unknown hardware profile \"hopper\"; valid: ampere");
  EXPECT_THROW(cat.names("bogus"), std::invalid_argument);
}

TEST(Catalog, OpenMissingDirectoryIsInputError) {
  EXPECT_INPUT_ERROR(Catalog::open("/nonexistent/megasim/configs"), "catalog", "does not exist");
}

TEST(Catalog, DefaultDirHonoursEnvironment) {
  ::setenv("MEGASIM_CATALOG_DIR", "/some/where", 1);
  EXPECT_EQ(default_catalog_dir("megasim"), std::filesystem::path("/some/where"));
  ::unsetenv("MEGASIM_CATALOG_DIR");
  EXPECT_TRUE(std::filesystem::is_directory(default_catalog_dir("/nonexistent/bin/megasim") / "gpus"));
}

// Every physical figure in the GPU and cluster catalogs carries its source (ENGINEERING rule 5).
TEST(Catalog, EveryFigureHasASource) {
  const auto cat = test::catalog();
  auto sourced = [](const nlohmann::json& v) { return v.is_object() && v.contains("source"); };
  for (const auto& g : cat.names("gpus")) {
    const auto entry = cat.entry("gpus", g, g);  // a named value: items() only borrows it
    for (const auto& [k, v] : entry.items()) {
      if (k == "name" || k == "description" || k == "profile" || k == "notes") continue;
      EXPECT_TRUE(sourced(v)) << g << "." << k << " has no source";
    }
  }
  const std::vector<std::string> figures{"nic_bandwidth", "switch_radix", "link_latency", "nic_latency"};
  for (const auto& c : {"megascale-a100-clos", "dgx-a100-hdr-clos", "dgx-h100-ndr-clos", "dgx-b200-ndr-clos",
                        "dgx-b300-xdr-clos"}) {
    const auto net = cat.entry("clusters", c, c).at("network");
    for (const auto& k : figures) EXPECT_TRUE(sourced(net.at(k))) << c << ".network." << k;
  }
  const auto defaults = cat.entry("clusters", "_network-defaults", "d");
  for (const auto& k : {"switch_radix", "oversubscription", "queue_pairs_per_connection", "link_latency", "nic_latency"}) {
    EXPECT_TRUE(sourced(defaults.at(k))) << "_network-defaults." << k;
  }
}

// Textbook: catalog figures become SI units. A100 80GB: 312 TFLOP/s = 3.12e14 FLOP/s;
// 80 GiB = 80 * 2^30 = 85899345920 B; NVLink 300 GB/s per direction = 3e11 B/s.
TEST(Catalog, GpuFiguresInSiUnitsTextbook) {
  auto j = test::small_job();
  const auto job = test::parse(j);
  EXPECT_DOUBLE_EQ(job.cluster.gpu.peak_bf16_flops, 312e12);
  EXPECT_DOUBLE_EQ(job.cluster.gpu.peak_fp8_flops, 0.0);
  EXPECT_DOUBLE_EQ(job.cluster.gpu.peak_fp32_flops, 19.5e12);
  EXPECT_DOUBLE_EQ(job.cluster.gpu.memory_bytes, 85899345920.0);
  EXPECT_DOUBLE_EQ(job.cluster.gpu.nvlink_bandwidth_Bps, 300e9);
  EXPECT_EQ(job.cluster.gpu.architecture_sm, 80);
  EXPECT_EQ(job.cluster.gpu.profile, "ampere");
  EXPECT_DOUBLE_EQ(job.cluster.pcie_bandwidth_Bps, 32e9);
  // 200 Gb/s = 25e9 B/s; without split ports the switch port defaults to the NIC rate.
  EXPECT_DOUBLE_EQ(job.cluster.network.nic_bandwidth_Bps, 25e9);
  EXPECT_DOUBLE_EQ(job.cluster.network.switch_port_bandwidth_Bps, 25e9);
  EXPECT_EQ(job.cluster.network.nics_per_node, 8);
  // 64-port leaf at 1:1 -> 32 downlinks -> 32 servers per rail ToR.
  EXPECT_EQ(job.cluster.network.servers_per_tor, 32);
  EXPECT_NEAR(job.cluster.network.link_latency_s, 230e-9, 1e-15);
}

TEST(Catalog, EveryGpuParses) {
  const auto cat = test::catalog();
  for (const auto& g : cat.names("gpus")) {
    auto j = test::small_job();
    j["cluster"]["gpu"] = g;
    const auto job = parse_job(j, cat, test::data_dir());
    EXPECT_EQ(job.cluster.gpu.name, g);
    EXPECT_GT(job.cluster.gpu.peak_bf16_flops, 3e14) << g;
  }
  auto j = test::small_job();
  j["cluster"]["gpu"] = "h800-sxm5-80gb";
  EXPECT_DOUBLE_EQ(test::parse(j).cluster.gpu.nvlink_bandwidth_Bps, 200e9);
  j["cluster"]["gpu"] = "h100-sxm5-80gb";
  EXPECT_DOUBLE_EQ(test::parse(j).cluster.gpu.nvlink_bandwidth_Bps, 450e9);
  EXPECT_EQ(test::parse(j).cluster.gpu.profile, "hopper");
  j["cluster"]["gpu"] = "b200-sxm-180gb";
  EXPECT_EQ(test::parse(j).cluster.gpu.profile, "blackwell");
}

TEST(Catalog, EveryClusterParses) {
  const auto cat = test::catalog();
  for (const auto& c : cat.names("clusters")) {
    auto j = test::small_job();
    j["cluster"] = nlohmann::json{{"base", c}, {"num_gpus", 16}};
    const auto job = parse_job(j, cat, test::data_dir());
    EXPECT_EQ(job.cluster.name, c);
    EXPECT_GT(job.cluster.network.nic_bandwidth_Bps, 0.0) << c;
  }
  // MegaScale: 64-port ToR with split 400G ports, 64 servers per ToR set.
  auto j = test::small_job();
  j["cluster"] = "megascale-a100-clos";
  j["training"]["global_batch_size"] = 3072;  // DP = 12288 / (2 * 2)
  const auto job = test::parse(j);
  EXPECT_EQ(job.cluster.num_gpus, 12288);
  EXPECT_TRUE(job.cluster.network.split_port);
  EXPECT_EQ(job.cluster.network.servers_per_tor, 64);
  EXPECT_DOUBLE_EQ(job.cluster.network.switch_port_bandwidth_Bps, 50e9);
}

}  // namespace
}  // namespace megasim
