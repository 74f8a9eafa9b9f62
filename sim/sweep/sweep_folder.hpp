// SweepFolder: the folder `commbound sweep` fills, laid out the same whether one machine simulates
// the points or the tasks of a Slurm job array do (each writes only its own points):
//   sweep.json               the manifest: the scenario, its --set and --calibration, and per point
//                            its name and fingerprint (what the point must have been computed from)
//   points/NNNNN.json        a finished point: name, fingerprint, metrics, its resolved scenario
//   points/NNNNN.toml        the same resolved scenario as a scenario file (`commbound run` reruns it)
//   results.csv, results.json  the finished points in [sweep] order, merged by collect()
// Every file is written whole or not at all (a temporary renamed into place), so a killed task
// leaves either a finished point or none.
#pragma once

#include "core/expected.hpp"
#include "sim/metrics/metrics.hpp"
#include "sim/sweep/sweep_runner.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace commbound::sim {

struct SweepPoint {
  std::string name;         // the [sweep] point's row name
  std::string fingerprint;  // sweep_fingerprint() of the point
};

struct SweepManifest {
  std::string scenario;                // the scenario file, as the user named it
  std::vector<std::string> sets;       // every --set, in order
  std::string calibration;             // --calibration ("" for the shipped presets)
  std::vector<SweepPoint> points;      // in [sweep] order
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SweepPoint, name, fingerprint)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SweepManifest, scenario, sets, calibration, points)

// What a finished point was computed from: the scenario file's text, every --set and the point's
// name. A point file whose fingerprint differs belongs to another version of the sweep.
std::string sweep_fingerprint(const std::string& scenario_text, const std::vector<std::string>& sets,
                              const std::string& name);

// What collect() found: the points of the manifest, and those without a finished file (missing,
// or computed from another version of the sweep), by index.
struct Collected {
  std::size_t points = 0;
  std::vector<std::size_t> missing;
};

class SweepFolder {
public:
  explicit SweepFolder(std::filesystem::path dir) : dir_(std::move(dir)) {}
  const std::filesystem::path& dir() const { return dir_; }

  // Makes the folder and its points/ for the sweep of `manifest`: a new or empty folder, or a
  // folder of the same sweep (its sweep.json names the same scenario file, --set and --calibration;
  // the sweep resumes there, a slice of it adds its points). A folder of another sweep only with
  // `force`, and then its point files and results are removed first, so that none of them is read
  // as this sweep's; any other folder only with `force` (nothing in it is removed).
  Status prepare(const SweepManifest& manifest, bool force) const;

  Status write_manifest(const SweepManifest& manifest) const;
  // The manifest; an error names the file when it is missing or not a manifest.
  Expected<SweepManifest> read_manifest() const;

  std::filesystem::path point_file(std::size_t index, const char* extension = ".json") const;
  // Point `index`'s metrics when its file is there and carries `fingerprint`, else nothing.
  std::optional<Metrics> finished(std::size_t index, const std::string& fingerprint) const;
  // Keeps a finished point: its resolved scenario as TOML, then its JSON (the JSON marks it done).
  Status keep(std::size_t index, const SweepManifest& manifest, const PointResult& point) const;

  // Writes results.csv and results.json from the finished points of `manifest`, in its order
  // (each JSON row with its resolved scenario). Deterministic: collecting twice writes the same
  // bytes. Fails only when a file cannot be read or written.
  Expected<Collected> collect(const SweepManifest& manifest) const;

private:
  std::optional<nlohmann::json> point_json(std::size_t index, const std::string& fingerprint) const;
  std::filesystem::path dir_;
};

}  // namespace commbound::sim
