#include "sim/validate/validation_run.hpp"

#include "network/nccl_tests.hpp"
#include "network/nccl_tests_log.hpp"
#include "network/platform.hpp"

#include <algorithm>

namespace commbound::sim {

std::vector<std::string> default_reference_tables(const std::filesystem::path& calibration_dir) {
  const auto dir = calibration_dir / "reference";
  return {(dir / "nccl-tests-published.csv").string(), (dir / "points-1to4-nodes.csv").string(),
          (dir / "nccl-tests-at-scale.csv").string(), (dir / "aws-p5-efa-2to4-nodes.csv").string()};
}

Expected<std::vector<PublishedPoint>> read_measured_points(const MeasuredSources& sources,
                                                           const std::filesystem::path& calibration_dir) {
  std::vector<std::string> references = sources.references;
  if (references.empty() && sources.logs.empty()) references = default_reference_tables(calibration_dir);
  std::vector<PublishedPoint> points;
  for (const std::string& path : references) {
    auto read = read_reference(path);
    if (!read) return read.error();
    points.insert(points.end(), read->begin(), read->end());
  }
  if (!sources.logs.empty()) {
    auto logs = network::read_nccl_tests_logs(sources.logs, sources.facts);
    if (!logs) return logs.error();
    const auto from_logs = points_from_logs(*logs);
    points.insert(points.end(), from_logs.begin(), from_logs.end());
  }
  return points;
}

Expected<std::vector<PublishedPoint>> points_on(const std::vector<PublishedPoint>& all, const Scenario& scenario) {
  auto points = matching(all, scenario);
  if (points.empty()) {
    return Error{"no measured point on GPU " + scenario.cluster.node.gpu + " with " +
                 std::to_string(scenario.cluster.node.gpus) + " GPUs per node"};
  }
  return points;
}

int largest_node_count(const std::vector<PublishedPoint>& points) {
  int nodes = 1;
  for (const auto& p : points) nodes = std::max(nodes, p.point.nodes);
  return nodes;
}

Expected<std::vector<ValidationRow>> simulate_measured_points(const Scenario& scenario,
                                                              const std::vector<PublishedPoint>& points,
                                                              const std::function<void(int, int)>& progress) {
  auto platform = network::Platform::create(scenario.cluster);
  if (!platform) return Error{scenario.path + ": " + platform.error().message};
  std::vector<network::SweepPoint> sweep;
  for (const auto& p : points) sweep.push_back(p.point);
  auto simulated = network::run_points(**platform, scenario.nccl, sweep, scenario.nccl_options.fidelity, progress);
  if (!simulated) return simulated.error();
  std::vector<ValidationRow> rows;
  for (std::size_t i = 0; i < points.size(); ++i) rows.push_back({points[i], (*simulated)[i], ""});
  exclude_unhealthy(rows, scenario.cluster);
  return rows;
}

}  // namespace commbound::sim
