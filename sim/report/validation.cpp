#include "sim/report/validation.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace commbound::sim {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

Expected<std::vector<PublishedPoint>> read_published(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{path + ": cannot be read"};
  std::vector<PublishedPoint> out;
  std::string line;
  int number = 0;
  bool header = true;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    if (header) {  // gpu,nodes,gpus_per_node,collective,algorithm,bytes,busbw_GBps,source
      header = false;
      continue;
    }
    std::vector<std::string> f;
    std::istringstream cells(line);
    std::string cell;
    while (f.size() < 7 && std::getline(cells, cell, ',')) f.push_back(cell);
    std::getline(cells, cell);
    f.push_back(cell);
    const std::string at = path + ":" + std::to_string(number) + ": ";
    if (f.size() != 8) return Error{at + "expected 8 comma-separated fields"};
    PublishedPoint p;
    p.gpu = f[0];
    p.nodes_text = f[1];
    p.bytes_text = f[5];
    p.published_algorithm = f[4];
    p.source = f[7];
    p.line = number;
    auto op = network::parse_collective_op(f[3]);
    if (!op) return Error{at + "collective = \"" + f[3] + "\": unknown"};
    p.point.op = *op;
    try {
      p.point.nodes = f[1] == "multi" ? kMultiNodes : std::stoi(f[1]);
      p.point.size_bytes = f[5] == "large" ? kLargeBytes : std::stod(f[5]);
      p.busbw_bytes_per_s = std::stod(f[6]) * 1e9;
    } catch (const std::exception&) {
      return Error{at + "nodes, bytes or busbw_GBps is not a number"};
    }
    if (f[4] != "any") {
      auto a = network::parse_algorithm(f[4]);
      if (!a) return Error{at + "algorithm = \"" + f[4] + "\": unknown"};
      p.point.algorithm = a;
    }
    out.push_back(p);
  }
  return out;
}

std::vector<PublishedPoint> matching(const std::vector<PublishedPoint>& all, const Scenario& scenario) {
  std::vector<PublishedPoint> out;
  const std::string gpu = lower(scenario.cluster.node.gpu);
  for (const auto& p : all) {
    if (gpu.rfind(lower(p.gpu), 0) == 0) out.push_back(p);
  }
  return out;
}

void write_validation(std::ostream& out, const std::vector<ValidationRow>& rows, bool csv) {
  if (csv) {
    out << "gpu,nodes,collective,algorithm,bytes,published_busbw_GBps,simulated_busbw_GBps,ratio,"
           "simulated_algorithm,simulated_protocol,source\n";
  } else {
    out << fmt::format("{:<5} {:>5} {:<13} {:<5} {:>11} {:>10} {:>10} {:>6}  {:<12} {}\n", "gpu", "nodes", "collective",
                       "algo", "bytes", "published", "simulated", "ratio", "simulated", "source");
  }
  for (const auto& r : rows) {
    const auto& p = r.published;
    const auto args = fmt::make_format_args(p.gpu, p.nodes_text, network::to_string(p.point.op), p.published_algorithm,
                                            p.bytes_text, p.busbw_bytes_per_s / 1e9, r.simulated.bus_bw_bytes_per_s / 1e9,
                                            r.ratio(), network::to_string(r.simulated.result.choice.algorithm),
                                            network::to_string(r.simulated.result.choice.protocol), p.source);
    out << fmt::vformat(csv ? "{},{},{},{},{},{:.1f},{:.1f},{:.3f},{},{},{}\n"
                            : "{:<5} {:>5} {:<13} {:<5} {:>11} {:>10.1f} {:>10.1f} {:>6.2f}  {:<5} {:<6} {}\n",
                        args);
  }
}

}  // namespace commbound::sim
