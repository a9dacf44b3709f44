#include "megasim/capreport/svg_chart.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace megasim {
namespace {

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(SvgChart, LineChartHasTitleLabelsLegendAndOnePointPerValue) {
  ChartSpec spec{"MFU vs <GPUs>", "GPUs", "MFU (%)", 700, 360, true, "c1"};
  const auto svg = svg_line_chart(spec, {256, 512, 1024},
                                  {{"a", {50, 48, 45}}, {"b", {60, std::nan(""), 55}}});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("MFU vs &lt;GPUs&gt;"), std::string::npos);  // escaped title
  EXPECT_NE(svg.find(">MFU (%)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">GPUs</text>"), std::string::npos);
  EXPECT_EQ(count(svg, "<circle"), 5u);  // the NaN is a gap, not a point
  EXPECT_EQ(count(svg, "class=\"series\""), 2u);
  EXPECT_EQ(count(svg, "class=\"legend-item\""), 2u);
  EXPECT_NE(svg.find("id=\"c1\""), std::string::npos);
}

// Textbook: two bars, two stacks of 1+2 and 3+1 -> 4 rects; y axis 0..4 in 1-steps (0,1,2,3,4).
TEST(SvgChart, StackedBarDrawsEveryPositiveSegmentAndTheLimitTextbook) {
  ChartSpec spec{"Breakdown", "GPUs", "time (s)", 700, 360, false, "c2"};
  const auto svg = svg_stacked_bar(spec, {"8", "16"}, {{"x", {1, 3}}, {"y", {2, 1}}},
                                   ChartSeries{"capacity", {3.5, 3.5}});
  EXPECT_EQ(count(svg, "class=\"bar\""), 4u);
  EXPECT_EQ(count(svg, "class=\"limit\""), 2u);
  EXPECT_EQ(count(svg, "class=\"legend-item\""), 3u);
  EXPECT_NE(svg.find(">4</text>"), std::string::npos);
}

TEST(SvgChart, HistogramBarsAndMarkers) {
  ChartSpec spec{"Dist", "days", "runs", 700, 360, false, "c3"};
  const auto svg = svg_histogram(spec, {1, 2, 3, 4}, {5, 10, 2}, {{"p50", 2.2}});
  EXPECT_EQ(count(svg, "class=\"bar\""), 3u);
  EXPECT_EQ(count(svg, "class=\"marker\""), 1u);
}

TEST(SvgChart, EmptyInputsStillGiveAValidSvg) {
  ChartSpec spec{"Empty", "x", "y", 700, 360, true, "c4"};
  const auto svg = svg_line_chart(spec, {}, {});
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

TEST(SvgChart, XmlEscape) { EXPECT_EQ(xml_escape("a<b&\"c'>"), "a&lt;b&amp;&quot;c&#39;&gt;"); }

}  // namespace
}  // namespace megasim
