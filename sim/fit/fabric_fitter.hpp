// The fabric fitter: real nccl-tests logs in, the few physical parameters of NCCL as implemented on
// that fabric out (network/fabric_fit.hpp), by least squares on log time.
//
// Why log time: a log spans 1 MiB to 16 GiB, four decades of time; relative errors weigh a 300 us
// point like a 30 ms one, which is what a user projecting both FSDP's per-layer gathers and a
// gradient all-reduce needs. Each residual is ln(simulated / measured) of one row's out-of-place
// time, simulated on the scenario's hardware by the same emulator a training run uses (one child
// process per evaluation: SimGrid allows one engine per process). Parameters stay inside their
// bounds through a smooth map (p = lo + (hi - lo) (1 + tanh x) / 2); GSL's trust-region
// Levenberg-Marquardt (gsl_multifit_nlinear) finds the minimum.
// A log no healthy fabric can produce (corrupt results, faster than its links allow, slower than
// a quarter of them) is refused with the reason, never absorbed into a fit.
#pragma once

#include "core/expected.hpp"
#include "network/fabric_fit.hpp"
#include "network/nccl_tests_log.hpp"
#include "sim/scenario/scenario.hpp"

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace commbound::sim {

// One measured row against its simulation.
struct LogPoint {
  std::string path;
  int line = 0;
  network::CollectiveOp op = network::CollectiveOp::all_reduce;
  int nodes = 1;
  int ranks = 1;
  double size_bytes = 0;
  double measured_s = 0;
  double simulated_s = 0;
  std::string algorithm;  // what the simulation ran
  std::string protocol;

  double error() const { return simulated_s / measured_s - 1; }  // > 0: simulated slower
  double measured_bus_bw_bytes_per_s() const;
  double simulated_bus_bw_bytes_per_s() const;
};

struct FitOptions {
  double min_bytes = 32.0 * (1 << 20);           // the band: FSDP's per-layer sizes and up
  double max_bytes = 16.0 * (1ull << 30);
  int max_iterations = 40;
};

// Why `log` cannot come from a healthy fabric of `scenario`'s hardware, or Ok.
Status check_healthy(const network::NcclTestsLog& log, const Scenario& scenario);

// Simulates every row of `logs` within the options' sizes on `scenario`'s hardware (resized to
// the largest node count) with `fit` (nullopt: the scenario's own). In a child process.
Expected<std::vector<LogPoint>> simulate_logs(const Scenario& scenario, const std::optional<network::FabricFit>& fit,
                                              const std::vector<network::NcclTestsLog>& logs, const FitOptions& options);

struct FitReport {
  network::FabricFit fit;
  std::vector<LogPoint> points;  // at the fitted parameters
  int evaluations = 0;
  double median_abs_error = 0;
  double max_abs_error = 0;
};

// Fits `logs` (each checked healthy first) on `scenario`'s hardware. `progress(evaluations)` is
// called after each evaluation of the model.
Expected<FitReport> fit_fabric(const Scenario& scenario, const std::vector<network::NcclTestsLog>& logs,
                               const FitOptions& options, const std::string& name,
                               const std::function<void(int)>& progress = {});

// calibration/fabric/<name>.toml: the parameters (units in the keys, bounds and reasons beside
// them) and their provenance (logs, NCCL versions, hardware, residual per point). Read back by
// Presets::fabric_fit.
void write_fabric_fit(std::ostream& out, const FitReport& report, const Scenario& scenario,
                      const std::vector<network::NcclTestsLog>& logs, const std::string& tool_version);

// median and max of |error| over `points`.
std::pair<double, double> abs_error_summary(const std::vector<LogPoint>& points);

}  // namespace commbound::sim
