// Fuzzes the scenario reader (sim/scenario/scenario.hpp) on any text: the input is a scenario file
// whose leading "#set key=value" lines (TOML comments) are also given as --set overrides, read with
// the shipped presets. Contract: an error names the file or the --set; a scenario has a cluster of
// at least one node of at least one GPU and links of positive bandwidth; each [sweep] point reads
// or fails the same way; the resolved scenario written back (resolved_scenario.hpp) reads back
// and writes the same document again.
#include "sim/scenario/resolved_scenario.hpp"
#include "sim/scenario/scenario.hpp"
#include "tests/fuzz/fuzz_input.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace commbound::fuzz {
namespace {

// Sweep points read per input: enough to reach every path of a point, bounded so that a [sweep]
// of thousands of values does not make one input slow.
constexpr std::size_t kMaxPoints = 4;

const sim::Presets& presets() {
  static const sim::Presets p(COMMBOUND_FUZZ_CALIBRATION_DIR);
  return p;
}

// The "#set key=value" lines at the top of the text.
std::vector<std::string> overrides_in(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  const std::string tag = "#set ";
  while (std::getline(in, line) && line.rfind(tag, 0) == 0) out.push_back(line.substr(tag.size()));
  return out;
}

void check_scenario(const sim::Scenario& sc, const std::string& path) {
  require(sc.path == path, "a scenario that forgot its path");
  require(sc.cluster.nodes >= 1, "a cluster of no nodes");
  require(sc.cluster.node.gpus >= 1, "a node of no GPUs");
  require(std::isfinite(sc.cluster.fabric.link.bw_bytes_per_s) && sc.cluster.fabric.link.bw_bytes_per_s > 0,
          "a fabric link without a positive bandwidth");
  require(std::isfinite(sc.cluster.node.nvlink.bw_bytes_per_s) && sc.cluster.node.nvlink.bw_bytes_per_s > 0,
          "an NVLink without a positive bandwidth");
}

// The resolved document of `sc` reads back, and resolves to the same document.
void check_resolved(const sim::Scenario& sc) {
  const std::string text = sim::resolved_scenario_toml(sc, "fuzz");
  const std::string path = scratch_file("resolved.toml", text);
  auto again = sim::load_scenario(path, {}, presets());
  require(static_cast<bool>(again), "the resolved scenario does not read back: " +
                                        (again ? std::string() : again.error().message) + "\n" + text);
  require(sim::resolved_scenario_toml(*again, "fuzz") == text,
          "the resolved scenario does not resolve to itself:\n" + text + "\n---\n" +
              sim::resolved_scenario_toml(*again, "fuzz"));
}

}  // namespace
}  // namespace commbound::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace commbound;
  using namespace commbound::fuzz;
  const std::string text = text_of(data, size);
  const std::string path = scratch_file("scenario.toml", text);
  const std::vector<std::string> overrides = overrides_in(text);
  auto file = sim::ScenarioFile::load(path, overrides, presets());
  if (!file) {
    require_error_names(file.error(), {path + ":", "--set "});
    return 0;
  }
  check_scenario(file->scenario(), path);
  check_resolved(file->scenario());
  require(file->points() >= 1, "a scenario of no points");
  for (std::size_t i = 0; i < std::min(file->points(), kMaxPoints); ++i) {
    auto point = file->point(i, overrides);
    if (!point) {
      require_error_names(point.error(), {path + ":", "--set "});
      continue;
    }
    check_scenario(*point, path);
  }
  return 0;
}
