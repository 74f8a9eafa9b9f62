#include "sim/sweep_folder.hpp"

#include "sim/report/metrics_report.hpp"
#include "sim/report/output.hpp"
#include "sim/scenario/resolved_scenario.hpp"

#include <fmt/format.h>

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

Status SweepFolder::prepare(bool force) const {
  if (fs::exists(dir_) && !fs::is_directory(dir_ / "points") && !fs::is_empty(dir_) && !force) {
    return Error{dir_.string() + ": exists and is not a sweep folder; not written into (pass --force, or another folder)"};
  }
  std::error_code ec;
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
                              [&](std::ostream& o) { write_metrics(o, rows, "csv", title); });
      !s) {
    return s.error();
  }
  // results.json: write_metrics' rows, each with the resolved scenario of its point.
  std::ostringstream text;
  write_metrics(text, rows, "json", title);
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
