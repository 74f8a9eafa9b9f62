#include "sim/engine/order_statistics.hpp"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_integration.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>

namespace commbound::sim {
namespace {

double max_density_times_x(double x, void* params) {
  const int n = *static_cast<const int*>(params);
  // n phi(x) Phi(x)^(n-1) x, with Phi^(n-1) through logs so that large n does not underflow early.
  const double log_cdf = std::log(gsl_cdf_ugaussian_P(x));
  return x * n * gsl_ran_ugaussian_pdf(x) * std::exp((n - 1) * log_cdf);
}

}  // namespace

double expected_max_standard_normal(int n) {
  if (n <= 1) return 0;
  static std::mutex mutex;
  static std::map<int, double> memo;  // engine actors ask for the same group sizes again and again
  std::lock_guard lock(mutex);
  if (auto it = memo.find(n); it != memo.end()) return it->second;
  constexpr std::size_t kWorkspace = 1000;
  std::unique_ptr<gsl_integration_workspace, decltype(&gsl_integration_workspace_free)> w(
      gsl_integration_workspace_alloc(kWorkspace), gsl_integration_workspace_free);
  gsl_function f{max_density_times_x, &n};
  double result = 0, abs_error = 0;
  // The integrand is below 1e-300 outside [-40, 40] for every n this engine meets (n <= 2^24).
  gsl_integration_qags(&f, -40, 40, 1e-12, 1e-10, kWorkspace, w.get(), &result, &abs_error);
  memo[n] = result;
  return result;
}

double expected_wait_s(double variance_s2, int ranks) {
  return std::sqrt(std::max(0.0, variance_s2)) * expected_max_standard_normal(ranks);
}

double expected_wait_s(const std::vector<double>& sigmas_s, int ranks) {
  double variance_s2 = 0;
  for (double s : sigmas_s) variance_s2 += s * s;
  return expected_wait_s(variance_s2, ranks);
}

double monte_carlo_wait_s(const std::vector<double>& sigmas_s, int ranks, int trials, std::uint64_t seed) {
  std::unique_ptr<gsl_rng, decltype(&gsl_rng_free)> rng(gsl_rng_alloc(gsl_rng_mt19937), gsl_rng_free);
  gsl_rng_set(rng.get(), static_cast<unsigned long>(seed));
  double sum_s = 0;
  for (int t = 0; t < trials; ++t) {
    double latest_s = -std::numeric_limits<double>::infinity();
    for (int r = 0; r < ranks; ++r) {
      double late_s = 0;
      for (double s : sigmas_s) late_s += gsl_ran_gaussian_ziggurat(rng.get(), s);
      latest_s = std::max(latest_s, late_s);
    }
    sum_s += latest_s;
  }
  return sum_s / trials;
}

}  // namespace commbound::sim
