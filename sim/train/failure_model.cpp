#include "sim/train/failure_model.hpp"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include <cmath>
#include <memory>

namespace commbound::sim {
namespace {

bool fails(const FailureProcess& p) { return p.mtbf_s > 0 && std::isfinite(p.mtbf_s); }

// The expected wall time of one segment of `length_s` (work + checkpoint) that must run without a
// failure, with a restart after each one.
double segment_s(const FailureProcess& p, double length_s) {
  if (!fails(p)) return length_s;
  const double m = p.mtbf_s;
  return m * std::exp(p.restart_s / m) * std::expm1(length_s / m);
}

}  // namespace

double young_interval_s(const FailureProcess& p) { return std::sqrt(2 * p.checkpoint_s * p.mtbf_s); }

double daly_interval_s(const FailureProcess& p) {
  const double d = p.checkpoint_s, m = p.mtbf_s;
  if (d >= 2 * m) return m;
  return std::sqrt(2 * d * m) * (1 + std::sqrt(d / (2 * m)) / 3 + d / (18 * m)) - d;
}

double expected_wall_s(const FailureProcess& p, double work_s, double interval_s) {
  const double full = std::floor(work_s / interval_s);
  const double rest_s = work_s - full * interval_s;
  double wall_s = full * segment_s(p, interval_s + p.checkpoint_s);
  if (rest_s > 0) wall_s += segment_s(p, rest_s + p.checkpoint_s);
  return wall_s;
}

MonteCarlo simulate_run(const FailureProcess& p, double work_s, double interval_s, long trials, std::uint64_t seed) {
  std::unique_ptr<gsl_rng, decltype(&gsl_rng_free)> rng(gsl_rng_alloc(gsl_rng_mt19937), gsl_rng_free);
  gsl_rng_set(rng.get(), static_cast<unsigned long>(seed));
  const double full = std::floor(work_s / interval_s);
  const double rest_s = work_s - full * interval_s;
  double sum_s = 0, sum2_s2 = 0, failures = 0;
  // One try at `length_s` of uninterrupted time: its wall time, failures and restarts included.
  auto segment = [&](double length_s) {
    double wall_s = 0;
    if (!fails(p)) return length_s;
    for (;;) {
      const double up_s = gsl_ran_exponential(rng.get(), p.mtbf_s);
      if (up_s >= length_s) return wall_s + length_s;
      wall_s += up_s;
      ++failures;
      for (;;) {  // the restart, which may fail too
        const double restart_up_s = gsl_ran_exponential(rng.get(), p.mtbf_s);
        if (restart_up_s >= p.restart_s) {
          wall_s += p.restart_s;
          break;
        }
        wall_s += restart_up_s;
        ++failures;
      }
    }
  };
  for (long t = 0; t < trials; ++t) {
    double wall_s = 0;
    for (double k = 0; k < full; ++k) wall_s += segment(interval_s + p.checkpoint_s);
    if (rest_s > 0) wall_s += segment(rest_s + p.checkpoint_s);
    sum_s += wall_s;
    sum2_s2 += wall_s * wall_s;
  }
  MonteCarlo mc;
  const double n = static_cast<double>(trials);
  mc.mean_wall_s = sum_s / n;
  const double variance_s2 = trials > 1 ? std::max(0.0, (sum2_s2 - n * mc.mean_wall_s * mc.mean_wall_s) / (n - 1)) : 0;
  mc.standard_error_s = std::sqrt(variance_s2 / n);
  mc.mean_failures = failures / n;
  return mc;
}

}  // namespace commbound::sim
