// Validation run: real nccl-tests measurements against the simulated fabric, as library calls.
//
//   reference tables, nccl-tests logs --> measured points (read_measured_points)
//     --> those on the scenario's GPU and node shape (points_on)
//     --> each simulated on the scenario's cluster, unhealthy sweeps marked (simulate_measured_points)
//     --> the report and figures (sim/report/validation.hpp)
//
// `commbound validate` is these calls in that order, with the scenario resized between the second
// and the third to the largest node count measured (largest_node_count). Nothing is fitted here.
#pragma once

#include "core/expected.hpp"
#include "network/nccl_tests_log.hpp"
#include "sim/report/validation.hpp"
#include "sim/scenario/scenario.hpp"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace commbound::sim {

// Where the measured points come from.
struct MeasuredSources {
  std::vector<std::string> references;  // reference tables (read_reference's two layouts)
  std::vector<std::string> logs;        // nccl-tests logs or manifests of logs (*.toml), as fit-fabric reads them
  network::LogFacts facts;              // what a log does not print (op, nodes, GPUs per node, algorithm)
};

// The reference tables read when `sources` names neither tables nor logs: the published points and
// the collected 1-4-node points of `calibration_dir`/reference.
std::vector<std::string> default_reference_tables(const std::filesystem::path& calibration_dir);

// The measured points of `sources` (with neither tables nor logs: the default tables of
// `calibration_dir`): every table's rows in order, then every log's out-of-place rows. The first
// unreadable file or bad field is the error.
Expected<std::vector<PublishedPoint>> read_measured_points(const MeasuredSources& sources,
                                                           const std::filesystem::path& calibration_dir);

// The points of `all` measured on `scenario`'s GPU with its GPUs per node (matching); none is an
// error naming the GPU and the node's GPU count.
Expected<std::vector<PublishedPoint>> points_on(const std::vector<PublishedPoint>& all, const Scenario& scenario);

// The most nodes any point ran on (at least 1): the cluster size that holds them all.
int largest_node_count(const std::vector<PublishedPoint>& points);

// Simulates every point, in order, on `scenario`'s cluster (which must hold the largest node
// count) with its NCCL model and fidelity, and marks the points of unhealthy sweeps
// (exclude_unhealthy). Calls `progress(done, total)` after each point. Starts SimGrid's engine:
// once per process. Fails when the platform cannot be built (naming the scenario) or a forced
// choice cannot run.
Expected<std::vector<ValidationRow>> simulate_measured_points(const Scenario& scenario,
                                                              const std::vector<PublishedPoint>& points,
                                                              const std::function<void(int, int)>& progress);

}  // namespace commbound::sim
