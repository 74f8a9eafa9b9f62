#include "sim/scenario/resolved_scenario.hpp"

#include "model/model_zoo.hpp"
#include "sim/scenario/scenario_schema.hpp"

#include <sstream>

namespace commbound::sim {

namespace {

bool name_is(const ScenarioSection& section, const char* name) { return std::string(section.name) == name; }

}  // namespace

toml::table resolved_scenario(const Scenario& sc) {
  // Every key of the schema that the scenario has a value for, section by section; the node, the
  // link and the model written out in full by their own key tables.
  toml::table doc;
  for (const ScenarioSection& section : scenario_sections()) {
    if (section.training && !sc.training) continue;
    if (name_is(section, "moe") && !sc.training->model.moe()) continue;  // a dense model has no router
    const std::string name = section.name;
    if (name.empty()) {
      write_keys(sc, section.keys, doc);
      continue;
    }
    toml::table table;
    write_keys(sc, section.keys, table);
    if (name == "cluster") {
      toml::table node;
      write_keys(sc.cluster.node, node_keys(), node);
      table.insert("node", std::move(node));
    }
    if (name == "fabric") {
      toml::table link;
      write_keys(sc.cluster.fabric.link, link_keys(), link);
      table.insert("link", std::move(link));
    }
    doc.insert(name, std::move(table));
  }
  toml::array degraded;
  for (const DegradedPart& part : sc.degraded) {
    toml::table table{{"component", part.kind == DegradedPart::Kind::nic ? "nic" : "gpu"},
                      {"node", static_cast<int64_t>(part.node)},
                      {"index", static_cast<int64_t>(part.index)},
                      {"speed_fraction", part.speed_fraction}};
    if (part.from_hour > 0) table.insert("from_hour", part.from_hour);
    if (part.hours > 0) table.insert("hours", part.hours);
    degraded.push_back(std::move(table));
  }
  if (!degraded.empty()) doc.insert("degraded", std::move(degraded));
  // Each job: its name, its nodes as inclusive ranges, and its sections as a scenario of its own
  // (the cluster cut to its node count) resolves them.
  toml::array jobs;
  for (const Job& job : sc.jobs) {
    toml::array ranges;
    for (const auto& [first, last] : consecutive_ranges(job.nodes)) {
      ranges.push_back(toml::array{static_cast<int64_t>(first), static_cast<int64_t>(last)});
    }
    Scenario alone = sc;
    alone.jobs.clear();
    alone.degraded.clear();
    alone.cluster.nodes = static_cast<int>(job.nodes.size());
    alone.training = job.training;
    const toml::table own = resolved_scenario(alone);
    toml::table table{{"name", job.name}, {"nodes", static_cast<int64_t>(job.nodes.size())}, {"node_ranges", ranges}};
    for (const char* section : {"model", "training", "parallel", "moe"}) {
      if (const toml::node* t = own.get(section)) table.insert(section, *t);
    }
    jobs.push_back(std::move(table));
  }
  if (!jobs.empty()) doc.insert("job", std::move(jobs));
  if (!sc.training) return doc;
  toml::table model;
  write_keys(sc.training->model, model::model_keys(), model);
  doc.insert("model", std::move(model));
  if (sc.workload) {
    const TraceWorkload& w = *sc.workload;
    toml::table workload{{"trace", w.path},  // absolute (read_workload): points/ is elsewhere
                         {"collectives", w.simulate_collectives ? "simulate" : "measured"}};
    if (w.step) workload.insert("step", static_cast<int64_t>(*w.step));
    toml::table groups;
    for (const auto& g : w.groups) groups.insert(g.trace_group, g.kind);
    if (!groups.empty()) workload.insert("groups", std::move(groups));
    doc.insert("workload", std::move(workload));
  }
  return doc;
}

std::string resolved_scenario_toml(const Scenario& scenario, const std::string& comment) {
  std::ostringstream out;
  out << "# " << comment << "\n" << toml::toml_formatter(resolved_scenario(scenario)) << "\n";
  return out.str();
}

std::string resolved_scenario_json(const Scenario& scenario) {
  std::ostringstream out;
  out << toml::json_formatter(resolved_scenario(scenario));
  return out.str();
}

}  // namespace commbound::sim
