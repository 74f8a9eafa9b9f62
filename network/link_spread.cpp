#include "network/link_spread.hpp"

#include "core/splitmix64.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace commbound::network {
double LinkSpread::nic_factor(long index, unsigned seed) const {
  if (pair_factors.empty()) return 1;
  const std::uint64_t bits = splitmix64((static_cast<std::uint64_t>(seed) << 40) ^ static_cast<std::uint64_t>(index));
  const double u = static_cast<double>(bits >> 11) * 0x1.0p-53;  // [0, 1)
  const double q = 1 - (1 - u) * (1 - u);
  const std::size_t n = pair_factors.size();
  return pair_factors[std::min(n - 1, static_cast<std::size_t>(q * static_cast<double>(n)))];
}

double LinkSpread::expected_min_factor(long nodes) const {
  const double n = static_cast<double>(pair_factors.size());
  const double half = static_cast<double>(nodes) / 2;
  double expected = 0;
  for (std::size_t j = 0; j < pair_factors.size(); ++j) {
    const double above_before = std::pow(1 - static_cast<double>(j) / n, half);
    const double above_after = std::pow(1 - static_cast<double>(j + 1) / n, half);
    expected += pair_factors[j] * (above_before - above_after);
  }
  return expected;
}

std::vector<double> pair_factors_from_times(std::vector<double> times_s) {
  if (times_s.empty()) return {};
  std::sort(times_s.begin(), times_s.end());
  const std::size_t n = times_s.size();
  const double median_s = n % 2 == 1 ? times_s[n / 2] : (times_s[n / 2 - 1] + times_s[n / 2]) / 2;
  std::vector<double> factors;
  for (double t : times_s) factors.push_back(median_s / t);
  std::sort(factors.begin(), factors.end());
  return factors;
}

}  // namespace commbound::network
