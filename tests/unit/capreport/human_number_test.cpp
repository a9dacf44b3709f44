#include <gtest/gtest.h>

#include <limits>

#include "megasim/report/human_number.hpp"

namespace megasim {
namespace {

TEST(HumanNumber, ThreeSignificantDigitsWithASuffix) {
  EXPECT_EQ(human_number(1.101e6), "1.10 M");
  EXPECT_EQ(human_number(1.981e6), "1.98 M");
  EXPECT_EQ(human_number(12345), "12.3 k");
  EXPECT_EQ(human_number(198.4e6), "198 M");
  EXPECT_EQ(human_number(2.5e9), "2.50 B");
  EXPECT_EQ(human_number(3e12), "3.00 T");
  EXPECT_EQ(human_number(-4.2e6), "-4.20 M");
  // Rounding moves to the next suffix instead of printing 1000 k.
  EXPECT_EQ(human_number(999999), "1.00 M");
  EXPECT_EQ(human_number(999400), "999 k");
  EXPECT_EQ(human_number(9999.7), "10.0 k");
  // Small magnitudes keep four significant digits, no suffix.
  EXPECT_EQ(human_number(6.351470), "6.351");
  EXPECT_EQ(human_number(1024), "1024");
  EXPECT_EQ(human_number(0), "0");
  EXPECT_EQ(human_number(std::numeric_limits<double>::quiet_NaN()), "n/a");
}

TEST(HumanNumber, CellsFromCsv) {
  EXPECT_EQ(human_cell("1.101e+06"), "1.10 M");
  EXPECT_EQ(human_cell("123456.7"), "123 k");
  EXPECT_EQ(human_cell("12288"), "12288");   // whole numbers (GPU counts) stay exact
  EXPECT_EQ(human_cell("0.5523"), "0.5523");
  EXPECT_EQ(human_cell("yes"), "yes");
  EXPECT_EQ(human_cell(""), "");
  EXPECT_EQ(human_cell("3e5 GPUs"), "3e5 GPUs");  // not only a number: text is kept
}

}  // namespace
}  // namespace megasim
