// Order statistics of run-to-run variability: a step or a collective starts when its slowest
// participant arrives, so the expected wait grows with the number of ranks.
//
// Each compute op's time on each rank is its table time plus an independent normal deviation whose
// standard deviation comes from the kernel table's measured spread, sigma = (p90 - p10) / (2 z90)
// (z90 = 1.2816, the standard normal's 90% quantile). A rank that ran ops with deviations sigma_i
// since the group last synchronised is late by a normal of standard deviation
// sqrt(sum sigma_i^2); the last of G independent such ranks arrives, on average,
// sqrt(sum sigma_i^2) E[max of G standard normals] after the mean. The representative-rank engine
// adds that expected wait instead of simulating every rank; expected_max_standard_normal gives the
// order statistic exactly (numerical integration), monte_carlo_wait the same wait by sampling every
// rank (the oracle the tests compare against).
#pragma once

#include <cstdint>
#include <vector>

namespace commbound::sim {

// The standard normal's 90% quantile: a measured p10..p90 spans 2 z90 standard deviations.
inline constexpr double kNormalZ90 = 1.2815515655446004;

// E[max(Z_1..Z_n)] for n independent standard normals: 0 for n = 1, 0.5642 for 2, 1.0294 for 4,
// 1.4236 for 8, 2.9970 for 256 (Harter 1961 tables). Computed by integrating n x phi(x) Phi(x)^(n-1) x dx.
double expected_max_standard_normal(int n);

// The expected wait of a group of `ranks` for its last member, each member having run ops whose
// times deviate independently with standard deviations `sigmas_s` since the group last met.
double expected_wait_s(const std::vector<double>& sigmas_s, int ranks);
// The same from the members' accumulated variance (the sum of the squared sigmas), as the engine
// keeps it; the form above calls this one.
double expected_wait_s(double variance_s2, int ranks);

// The same, by sampling: `trials` draws of every rank's every op deviation (GSL's MT19937 seeded
// with `seed`, Gaussian by the ziggurat method), the mean over trials of the latest rank's total.
double monte_carlo_wait_s(const std::vector<double>& sigmas_s, int ranks, int trials, std::uint64_t seed);

}  // namespace commbound::sim
