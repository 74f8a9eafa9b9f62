#include "sim/sweep/sweep_folder.hpp"

#include "core/file_type.hpp"
#include "sim/report/metrics_report.hpp"
#include "sim/report/output.hpp"
#include "sim/scenario/resolved_scenario.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <sstream>

namespace commbound::sim {

namespace fs = std::filesystem;

std::string sweep_fingerprint(const std::string& scenario_text, const std::vector<std::string>& sets,
                              const std::string& name) {
  std::string key = scenario_text;
  for (const auto& s : sets) key += "\n--set " + s;
  key += "\n" + name;
  return fmt::format("{:016x}", std::hash<std::string>{}(key));
}

namespace {

// `path` as the file system resolves it (relative to the working directory), so that a scenario
// named "a.toml" by one run and "/abs/a.toml" by a job array's task compare equal; as given when
// it cannot be resolved.
std::string resolved(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(path, ec);
  return ec ? path : canonical.string();
}

// Whether two manifests are one sweep: the same scenario file, --set and --calibration (the file's
// text may differ: an edited scenario resumes, its changed points simulated again).
bool same_sweep(const SweepManifest& a, const SweepManifest& b) {
  return resolved(a.scenario) == resolved(b.scenario) && a.sets == b.sets &&
         resolved(a.calibration) == resolved(b.calibration);
}

// "scenarios/x.toml --set a=1": what a manifest's sweep ran, for a message.
std::string command_of(const SweepManifest& m) {
  std::string c = m.scenario;
  for (const auto& s : m.sets) c += " --set " + s;
  if (!m.calibration.empty()) c += " --calibration " + m.calibration;
  return c;
}

// Whether `file` is a point file: NNNNN.json or NNNNN.toml, the stem all digits (point_file()).
bool is_point_file(const fs::path& file) {
  const std::string stem = file.stem().string();
  const auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  return stem.size() >= 5 && std::all_of(stem.begin(), stem.end(), digit) &&
         (file.extension() == ".json" || file.extension() == ".toml");
}

}  // namespace

Status SweepFolder::prepare(const SweepManifest& manifest, bool force) const {
  if (Status ok = check_folder_writable(dir_.string()); !ok) return ok;
  std::error_code ec;
  auto type = file_type_at(dir_);
  if (!type) return type.error();
  if (*type != fs::file_type::not_found && *type != fs::file_type::directory) {
    return Error{dir_.string() + ": exists and is not a folder"};
  }
  const bool empty = *type == fs::file_type::not_found || fs::is_empty(dir_, ec);
  if (ec) return Error{dir_.string() + ": " + ec.message()};
  auto points_type = file_type_at(dir_ / "points");
  if (!points_type) return points_type.error();
  auto manifest_type = file_type_at(dir_ / "sweep.json");
  if (!manifest_type) return manifest_type.error();
  const bool has_manifest = *manifest_type != fs::file_type::not_found;
  bool other_sweep = false;  // this folder's points and results are another sweep's
  if (has_manifest) {
    auto existing = read_manifest();
    if (!existing) {
      if (!force) return Error{existing.error().message + "; not written into (pass --force to replace its points, or another folder)"};
      other_sweep = true;
    } else if (!same_sweep(*existing, manifest)) {
      if (!force) {
        return Error{dir_.string() + ": holds the sweep of " + command_of(*existing) +
                     "; not written into (pass --force to replace its points, or another folder)"};
      }
      other_sweep = true;
    }
  } else if (!empty && *points_type != fs::file_type::directory && !force) {
    return Error{dir_.string() + ": exists and is not a sweep folder; not written into (pass --force, or another folder)"};
  }
  if (other_sweep) {
    for (fs::directory_iterator it(dir_ / "points", ec), end; !ec && it != end; it.increment(ec)) {
      if (!is_point_file(it->path().filename())) continue;
      std::error_code removed;
      fs::remove(it->path(), removed);
      if (removed) return Error{it->path().string() + ": cannot remove: " + removed.message()};
    }
    if (ec && ec != std::errc::no_such_file_or_directory) return Error{(dir_ / "points").string() + ": " + ec.message()};
    for (const char* results : {"results.csv", "results.json"}) {
      std::error_code removed;
      fs::remove(dir_ / results, removed);
      if (removed) return Error{(dir_ / results).string() + ": cannot remove: " + removed.message()};
    }
  }
  fs::create_directories(dir_ / "points", ec);
  if (ec) return Error{dir_.string() + ": cannot create: " + ec.message()};
  return Ok{};
}

Status SweepFolder::write_manifest(const SweepManifest& manifest) const {
  return write_output((dir_ / "sweep.json").string(), true,
                      [&](std::ostream& o) { o << nlohmann::json(manifest).dump(1) << "\n"; });
}

Expected<SweepManifest> SweepFolder::read_manifest() const {
  const fs::path path = dir_ / "sweep.json";
  std::ifstream in(path);
  if (!in) return Error{path.string() + ": cannot read (not a sweep folder: `commbound sweep` writes it)"};
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) return Error{path.string() + ": not JSON"};
  try {
    return j.get<SweepManifest>();
  } catch (const nlohmann::json::exception& e) {
    return Error{path.string() + ": not a sweep manifest: " + e.what()};
  }
}

fs::path SweepFolder::point_file(std::size_t index, const char* extension) const {
  return dir_ / "points" / fmt::format("{:05d}{}", index, extension);
}

std::optional<nlohmann::json> SweepFolder::point_json(std::size_t index, const std::string& fingerprint) const {
  std::ifstream in(point_file(index));
  if (!in) return std::nullopt;
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("fingerprint", "") != fingerprint || !j.contains("metrics")) {
    return std::nullopt;  // another version of the sweep, or a damaged file: not finished
  }
  return j;
}

std::optional<Metrics> SweepFolder::finished(std::size_t index, const std::string& fingerprint) const {
  auto j = point_json(index, fingerprint);
  if (!j) return std::nullopt;
  try {
    return j->at("metrics").get<Metrics>();
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

Status SweepFolder::keep(std::size_t index, const SweepManifest& manifest, const PointResult& point) const {
  const std::string comment = fmt::format("point {} of {} ({}), resolved by commbound sweep", index, manifest.scenario,
                                          point.name);
  if (Status s = write_output(point_file(index, ".toml").string(), true,
                              [&](std::ostream& o) { o << resolved_scenario_toml(point.scenario, comment); });
      !s) {
    return s;
  }
  const nlohmann::json j = {{"name", point.name},
                            {"scenario", manifest.scenario},
                            {"set", manifest.sets},
                            {"fingerprint", manifest.points.at(index).fingerprint},
                            {"metrics", point.metrics},
                            {"resolved_scenario", nlohmann::json::parse(resolved_scenario_json(point.scenario))}};
  return write_output(point_file(index).string(), true, [&](std::ostream& o) { o << j.dump(1) << "\n"; });
}

Expected<Collected> SweepFolder::collect(const SweepManifest& manifest) const {
  Collected c;
  c.points = manifest.points.size();
  std::vector<std::pair<std::string, Metrics>> rows;
  std::vector<nlohmann::json> resolved;
  for (std::size_t i = 0; i < manifest.points.size(); ++i) {
    auto j = point_json(i, manifest.points[i].fingerprint);
    std::optional<Metrics> metrics;
    if (j) {
      try {
        metrics = j->at("metrics").get<Metrics>();
      } catch (const nlohmann::json::exception&) {
      }
    }
    if (!metrics) {
      c.missing.push_back(i);
      continue;
    }
    rows.emplace_back(manifest.points[i].name, *metrics);
    resolved.push_back(j->value("resolved_scenario", nlohmann::json::object()));
  }
  const std::string title = "commbound sweep: " + manifest.scenario;
  if (Status s = write_output((dir_ / "results.csv").string(), true,
                              [&](std::ostream& o) { write_metrics(o, rows, Format::csv, title); });
      !s) {
    return s.error();
  }
  // results.json: write_metrics' rows, each with the resolved scenario of its point.
  std::ostringstream text;
  write_metrics(text, rows, Format::json, title);
  nlohmann::json results = nlohmann::json::parse(text.str());
  for (std::size_t r = 0; r < rows.size(); ++r) results.at("rows").at(r)["resolved_scenario"] = resolved[r];
  if (Status s = write_output((dir_ / "results.json").string(), true,
                              [&](std::ostream& o) { o << results.dump(2) << "\n"; });
      !s) {
    return s.error();
  }
  return c;
}

}  // namespace commbound::sim
