#pragma once
// Strong unit types and unit-string parsing (DESIGN.md B2 rules 2-4).
//
// SimTime is integer picoseconds so that event ordering never depends on floating-point
// rounding. Bytes is 64-bit (a gradient bucket can exceed 2 GiB). Where a raw double is
// unavoidable (cost formulas), the variable name carries the unit: `time_s`, `rate_Bps`.
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

namespace megasim {

class SimTime {
 public:
  constexpr SimTime() = default;
  static constexpr SimTime from_ps(std::int64_t ps) { return SimTime(ps); }
  // Rounds to the nearest picosecond; negative and non-finite inputs are a programming error
  // and are clamped to 0 / max respectively.
  static SimTime from_seconds(double seconds);
  static constexpr SimTime max() { return SimTime(INT64_MAX); }

  constexpr std::int64_t ps() const { return ps_; }
  constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }

  constexpr SimTime operator+(SimTime o) const { return SimTime(ps_ + o.ps_); }
  constexpr SimTime operator-(SimTime o) const { return SimTime(ps_ - o.ps_); }
  constexpr SimTime& operator+=(SimTime o) { ps_ += o.ps_; return *this; }
  constexpr SimTime& operator-=(SimTime o) { ps_ -= o.ps_; return *this; }
  constexpr auto operator<=>(const SimTime&) const = default;

 private:
  constexpr explicit SimTime(std::int64_t ps) : ps_(ps) {}
  std::int64_t ps_ = 0;
};

struct Bytes {
  std::int64_t value = 0;
  constexpr Bytes operator+(Bytes o) const { return {value + o.value}; }
  constexpr Bytes operator-(Bytes o) const { return {value - o.value}; }
  constexpr Bytes& operator+=(Bytes o) { value += o.value; return *this; }
  constexpr auto operator<=>(const Bytes&) const = default;
  constexpr double as_double() const { return static_cast<double>(value); }
};

// Floating-point comparison of rates and shares goes through one helper (DESIGN.md B2 rule 4).
inline constexpr double kRelEpsilon = 1e-9;
bool nearly_equal(double a, double b, double rel_eps = kRelEpsilon);

// Unit-string parsers. `path` names the JSON field for the error message; a bare number
// or a malformed string throws InputError(path, rule).
//   bytes:      "512B" "80GB" (1e9) "80GiB" (2^30) "1.5KiB"; units B KB MB GB TB KiB MiB GiB TiB
//   bandwidth:  "200Gbps" (bits/s: bps Kbps Mbps Gbps Tbps) or "25GB/s" (bytes/s: B/s KB/s MB/s
//               GB/s TB/s KiB/s MiB/s GiB/s); returns bytes per second
//   time:       "10ps" "10ns" "1.5us" "2ms" "3s" "5min" "2h" "1d"; returns seconds
//   flops rate: "312TFLOPS" or "312TFLOP/s" (also K M G T P E prefixes); returns FLOP/s
double parse_bytes(std::string_view text, const std::string& path);
double parse_bandwidth_Bps(std::string_view text, const std::string& path);
double parse_time_s(std::string_view text, const std::string& path);
double parse_flops_rate(std::string_view text, const std::string& path);

// Human-readable formatting for tables and logs ("1.50 GiB", "23.4 ms", "192 GB/s").
std::string format_bytes(double bytes);
std::string format_time(double seconds);
std::string format_rate_GBps(double bytes_per_s);

}  // namespace megasim
