// Validation against published nccl-tests results (calibration/reference/nccl-tests-published.csv):
// each published point whose GPU matches the scenario's node is simulated on the scenario's
// cluster and reported beside the published busbw. Nothing is fitted to these points.
#pragma once

#include "calibration/base/expected.hpp"
#include "network/nccl_tests.hpp"
#include "sim/scenario/scenario.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace commbound::sim {

struct PublishedPoint {
  std::string gpu;          // "H100", "A100"
  std::string nodes_text;   // as published ("multi" is simulated at kMultiNodes)
  std::string bytes_text;   // as published ("large" is simulated at kLargeBytes)
  network::SweepPoint point;
  double busbw_bytes_per_s = 0;
  std::string published_algorithm;
  std::string source;
  int line = 0;
};

inline constexpr int kMultiNodes = 8;                 // "multi": a multi-node measurement of unstated size
inline constexpr double kLargeBytes = 8589934592.0;   // "large": the top of an nccl-tests sweep (8 GiB)

// Reads the published table; errors name the file and line.
Expected<std::vector<PublishedPoint>> read_published(const std::string& path);

// The points measured on the scenario's GPU (the node's gpu preset starts with the row's gpu name).
std::vector<PublishedPoint> matching(const std::vector<PublishedPoint>& all, const Scenario& scenario);

struct ValidationRow {
  PublishedPoint published;
  network::SweepRow simulated;
  double ratio() const { return simulated.bus_bw_bytes_per_s / published.busbw_bytes_per_s; }
};

// Columns: gpu,nodes,collective,algorithm,bytes,published_busbw_GBps,simulated_busbw_GBps,ratio,
// simulated_algorithm,simulated_protocol,source
void write_validation(std::ostream& out, const std::vector<ValidationRow>& rows, bool csv);

}  // namespace commbound::sim
