#include <gtest/gtest.h>

#include "megasim/core/error.hpp"
#include "megasim/core/units.hpp"

namespace megasim {
namespace {

TEST(Units, ParsesDecimalAndBinaryBytes) {
  EXPECT_DOUBLE_EQ(parse_bytes("80GB", "x"), 80e9);
  EXPECT_DOUBLE_EQ(parse_bytes("80GiB", "x"), 80.0 * 1073741824.0);
  EXPECT_DOUBLE_EQ(parse_bytes("1.5KiB", "x"), 1536.0);
  EXPECT_DOUBLE_EQ(parse_bytes("512 B", "x"), 512.0);
}

TEST(Units, ParsesBitAndByteBandwidths) {
  // 200 Gb/s = 25 GB/s.
  EXPECT_DOUBLE_EQ(parse_bandwidth_Bps("200Gbps", "x"), 25e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth_Bps("25GB/s", "x"), 25e9);
}

TEST(Units, ParsesDurationsAndRates) {
  EXPECT_DOUBLE_EQ(parse_time_s("1.5us", "x"), 1.5e-6);
  EXPECT_DOUBLE_EQ(parse_time_s("5min", "x"), 300.0);
  EXPECT_DOUBLE_EQ(parse_flops_rate("312TFLOPS", "x"), 312e12);
  EXPECT_DOUBLE_EQ(parse_flops_rate("1.2EFLOP/s", "x"), 1.2e18);
}

TEST(Units, MalformedStringNamesFieldAndRule) {
  try {
    parse_bandwidth_Bps("200Gbs", "cluster.network.nic_bandwidth");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "cluster.network.nic_bandwidth");
    EXPECT_NE(std::string(e.what()).find("200Gbs"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("Gbps"), std::string::npos);
  }
  EXPECT_THROW(parse_bytes("80", "x"), InputError);       // bare number: unit required
  EXPECT_THROW(parse_bytes("GB", "x"), InputError);       // no number
  EXPECT_THROW(parse_bytes("-1GB", "x"), InputError);     // negative
  EXPECT_THROW(parse_time_s("1e999s", "x"), InputError);  // not finite
}

TEST(Units, SimTimeIsIntegerPicoseconds) {
  EXPECT_EQ(SimTime::from_seconds(1.5e-6).ps(), 1500000);
  EXPECT_EQ(SimTime::from_seconds(-1.0).ps(), 0);
  EXPECT_EQ((SimTime::from_ps(3) + SimTime::from_ps(4)).ps(), 7);
  EXPECT_TRUE(nearly_equal(0.1 + 0.2, 0.3));
}

}  // namespace
}  // namespace megasim
