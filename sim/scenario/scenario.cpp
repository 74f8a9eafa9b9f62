#include "sim/scenario/scenario.hpp"

#include "core/file_type.hpp"
#include "core/number_text.hpp"
#include "core/one_line.hpp"
#include "core/table_reader.hpp"
#include "sim/scenario/model.hpp"
#include "sim/scenario/pp_layout.hpp"
#include "sim/scenario/scenario_schema.hpp"
#include "sim/scenario/size_limits.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>
#include <tuple>
#include <utility>
#include <variant>
#include <sstream>

namespace commbound::sim {

namespace {

// The latest hour a [[degraded]] window may name: 10^6 hours (114 years) is past any training run;
// the bound keeps the value finite, nothing is sized by it.
constexpr double kMaxWindowHours = 1e6;

// Where the value of `section_name.key` came from, for an error: its --set, else its place in
// the file, else the file itself.
std::string origin_of(const Overrides& origins, const toml::table* section, const std::string& section_name,
                      const std::string& key, const std::string& path) {
  if (const auto it = origins.find(section_name + "." + key); it != origins.end()) return it->second;
  const toml::node* n = section != nullptr ? section->get(key) : nullptr;
  return n != nullptr ? where(*n) : path;
}

// Sets `key` (dotted) of `doc` to `value`, creating the tables on its path; `origin` names where
// the value came from ("--set k=v", or the [sweep] value's "file:line") in later error messages.
Status set_value(toml::table& doc, const std::string& key, const toml::node& value, const std::string& origin,
                 Overrides& origins) {
  toml::table* at = &doc;
  std::string part;
  std::istringstream parts(key);
  std::vector<std::string> path;
  while (std::getline(parts, part, '.')) {
    if (part.empty()) return Error{origin + ": empty part in dotted key \"" + key + "\""};
    path.push_back(part);
  }
  if (path.empty()) return Error{origin + ": empty key"};
  for (std::size_t i = 0; i + 1 < path.size(); ++i) {
    // "job[1]": the second table of the array of tables [[job]], which must exist.
    if (const auto open = path[i].find('['); open != std::string::npos && path[i].back() == ']') {
      const toml::node* array = at->get(path[i].substr(0, open));
      const auto index = parse_number<long>(path[i].substr(open + 1, path[i].size() - open - 2));
      const bool found = array != nullptr && array->is_array() && index && *index >= 0 &&
                         static_cast<std::size_t>(*index) < array->as_array()->size();
      if (!found || !array->as_array()->get(static_cast<std::size_t>(*index))->is_table()) {
        return Error{origin + ": \"" + path[i] + "\" is not a table of the file (an array of tables counts from 0)"};
      }
      at = at->get(path[i].substr(0, open))->as_array()->get(static_cast<std::size_t>(*index))->as_table();
      continue;
    }
    toml::node* next = at->get(path[i]);
    if (next == nullptr) {
      at->insert(path[i], toml::table{});
      next = at->get(path[i]);
    }
    if (!next->is_table()) return Error{origin + ": \"" + path[i] + "\" is not a table"};
    at = next->as_table();
  }
  value.visit([&](const auto& v) { at->insert_or_assign(path.back(), v); });
  origins[key] = origin;
  return Ok{};
}

// Applies one --set override to the parsed document. Values parse as TOML ("4", "1.5", "true",
// "\"x\"", "[1, 2]"); anything else is taken as a bare string (so --set fabric.link=ib-hdr works).
Status apply_override(toml::table& doc, const std::string& assignment, Overrides& origins) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Error{"--set " + assignment + ": expected key=value with a dotted key, e.g. --set cluster.nodes=4"};
  }
  const std::string key = assignment.substr(0, eq);
  const std::string value = assignment.substr(eq + 1);
  const std::string origin = "--set " + assignment;
  toml::table parsed;
  // A string key of the schema takes the text as given (--set nccl.release=2.30 is not 2.3).
  const KeySpec<Scenario>* spec = find_scenario_key(key);
  const bool text_key = spec != nullptr && (spec->type == KeyType::string || spec->type == KeyType::choice) &&
                        spec->boolean_names.empty() && !value.starts_with('"');
  if (text_key) return set_value(doc, key, toml::value<std::string>(value), origin, origins);
  try {
    parsed = toml::parse("v = " + value, origin);
  } catch (const toml::parse_error& e) {
    // A number TOML cannot hold (an integer past 64 bits, a float past a double) is out of range,
    // not the bare string the fallback below would make of it.
    for (const Status& number : {parse_number<int64_t>(value).status(), parse_number<double>(value).status()}) {
      if (!number && number.error().message.rfind("out of range", 0) == 0) {
        return Error{origin + ": " + key + " = " + value + ": " + number.error().message};
      }
    }
    // A value that opens an array, an inline table or a quoted string was meant as TOML: say what
    // is wrong with it rather than take it as a bare string.
    if (value.starts_with('[') || value.starts_with('{') || value.starts_with('"')) {
      const auto count = [&value](char c) { return std::count(value.begin(), value.end(), c); };
      const std::string why = count('[') > count(']')   ? "an unclosed array (a ']' is missing)"
                              : count('{') > count('}') ? "an unclosed inline table (a '}' is missing)"
                                                        : "not a TOML value: " + std::string(e.description());
      return one_line(Error{origin + ": " + key + " = " + value + ": " + why});
    }
    std::string quoted = "\"";
    for (char c : value) {
      if (c == '"' || c == '\\') quoted += '\\';
      quoted += c;
    }
    try {
      parsed = toml::parse("v = " + quoted + "\"", origin);
    } catch (const toml::parse_error&) {
      return Error{origin + ": the value is neither TOML nor a plain string"};
    }
  }
  return set_value(doc, key, *parsed.get("v"), origin, origins);
}

// A sweep value as a row name shows it: strings bare, anything else as TOML writes it.
std::string render(const toml::node& v) {
  std::ostringstream text;
  if (v.is_string()) {
    text << v.value_or<std::string>("");
  } else {
    v.visit([&](auto&& x) { text << x; });
  }
  return text.str();
}

// [cluster] kernel_table: "roofline"; "auto" (calibration/<gpu>.toml if it exists); or a file,
// relative to the working directory, else to the calibration directory. Gives the table, or why
// the roofline is used; a named file that is missing or invalid is an error.
using TableOrReason = std::variant<std::shared_ptr<const calibration::KernelTable>, std::string>;
// Kernel tables already read, by file and display name: a sweep reads its table once.
using TableCache = std::map<std::string, std::shared_ptr<const calibration::KernelTable>>;
Expected<TableOrReason> resolve_kernel_table(const std::string& setting, const std::string& gpu, const Presets& presets,
                                             TableCache& cache) {
  namespace fs = std::filesystem;
  if (setting == "roofline") return TableOrReason{std::string("kernel_table = \"roofline\"")};
  fs::path file;
  std::string display;
  if (setting == "auto") {
    file = presets.dir() / (gpu + ".toml");
    display = presets.dir() == default_calibration_dir() ? "calibration/" + gpu + ".toml" : file.string();
    auto type = file_type_at(file);
    if (!type) return type.error();
    if (*type == fs::file_type::not_found) return TableOrReason{"no " + display + " for GPU " + gpu};
  } else {
    file = setting;
    display = setting;
    // The working directory first, then the calibration directory; a path the system cannot look
    // up (a symlink loop, a name too long) is an error with its reason.
    auto type = file_type_at(file);
    if (type && *type == fs::file_type::not_found && file.is_relative()) {
      auto in_presets = file_type_at(presets.dir() / file);
      if (!in_presets) return in_presets.error();
      if (*in_presets != fs::file_type::not_found) {
        file = presets.dir() / file;
        type = in_presets;
      }
    }
    if (!type) return type.error();
    if (*type == fs::file_type::not_found) {
      return Error{"no such file (relative paths are tried in the working directory, then in " + presets.dir().string() + ")"};
    }
  }
  const std::string key = fs::absolute(file).lexically_normal().string() + "\n" + display;
  if (auto hit = cache.find(key); hit != cache.end()) return TableOrReason{hit->second};
  auto table = calibration::KernelTable::load(file, display);
  if (!table) {
    if (setting == "auto") return Error{"(auto) " + table.error().message};
    return table.error();
  }
  auto shared = std::make_shared<const calibration::KernelTable>(std::move(*table));
  cache.emplace(key, shared);
  return TableOrReason{shared};
}

// [sweep]: key (one dotted key, or several), values (one per point) and grid ("zip" or
// "cartesian"); each point's values are kept typed as the file wrote them.
Expected<Sweep> read_sweep(const toml::table& table, const Overrides& origins) {
  TableReader sweep(table, "sweep", &origins);
  Sweep sw;
  const toml::node* key = table.get("key");
  if (key != nullptr && key->is_array()) {
    if (const toml::array* keys = sweep.required_array("key"); keys != nullptr) {  // null (an error) when empty
      for (const auto& k : *keys) sw.keys.push_back(render(k));
    }
  } else {
    sw.keys.push_back(sweep.required_string("key"));
  }
  // grid = "zip" (default): each value is one point, an array with one entry per key;
  // "cartesian": values holds one array per key, and every combination is a point (first key outermost).
  const std::string grid = sweep.choice("grid", "zip", {"zip", "cartesian"});
  const toml::array* values = sweep.required_array("values");
  toml::array combinations;
  if (values != nullptr && grid == "cartesian" && sw.keys.size() > 1) {
    const bool shaped = values->size() == sw.keys.size() &&
                        std::all_of(values->begin(), values->end(), [](const toml::node& n) { return n.is_array(); });
    // The grid's size first, in checked arithmetic: a few long axes multiply past any memory.
    std::optional<std::int64_t> grid_points = 1;
    for (std::size_t k = 0; shaped && grid_points && k < values->size(); ++k) {
      grid_points = checked_product(*grid_points, static_cast<std::int64_t>(values->get(k)->as_array()->size()));
    }
    if (!shaped) {
      sweep.fail("values", "grid = \"cartesian\" needs one array of values per key (" + std::to_string(sw.keys.size()) + ")");
    } else if (!grid_points || *grid_points > kMaxSweepPointsForced) {
      sweep.fail("values", "a cartesian grid of " + (grid_points ? std::to_string(*grid_points) : "more than 2^63") +
                               " points, more than " + std::to_string(kMaxSweepPointsForced) +
                               " (docs/limits.md): split the sweep");
    } else {
      std::vector<toml::array> points(1);
      for (const auto& axis : *values) {
        std::vector<toml::array> grown;
        for (const auto& point : points) {
          for (const auto& v : *axis.as_array()) {
            toml::array next = point;
            next.push_back(v);
            grown.push_back(std::move(next));
          }
        }
        points = std::move(grown);
      }
      for (auto& point : points) combinations.push_back(std::move(point));
      values = &combinations;
    }
  }
  if (values != nullptr && !sweep.failed() && static_cast<std::int64_t>(values->size()) > kMaxSweepPointsForced) {
    sweep.fail("values", std::to_string(values->size()) + " points, more than " + std::to_string(kMaxSweepPointsForced) +
                             " (docs/limits.md): split the sweep");
  }
  if (values != nullptr && !sweep.failed()) {
    for (const auto& v : *values) {
      toml::array point;
      if (sw.keys.size() == 1) {
        point.push_back(v);
      } else if (v.is_array() && v.as_array()->size() == sw.keys.size()) {
        point = *v.as_array();
      } else {
        sweep.fail("values", "each value must be an array of " + std::to_string(sw.keys.size()) + " entries, one per key");
        break;
      }
      std::string name;
      for (std::size_t k = 0; k < point.size(); ++k) {
        name += (name.empty() ? "" : " ") + sw.keys[k] + "=" + render(*point.get(k));
      }
      sw.names.push_back(name);
      sw.values.push_back(std::move(point));
    }
  }
  if (Status s = sweep.finish(); !s) return s.error();
  return sw;
}

// [workload]: trace (a file, relative to the scenario file's folder), step, collectives, groups.
Expected<TraceWorkload> read_workload(const toml::table& table, const Overrides& origins, const std::string& path,
                                      const TrainingSpec& t) {
  namespace fs = std::filesystem;
  TableReader r(table, "workload", &origins);
  TraceWorkload w;
  const std::string trace = r.required_string("trace");
  const long step = r.integer("step", -1, 0, 1L << 40);  // -1: not given
  if (step >= 0) w.step = step;
  w.simulate_collectives = r.choice("collectives", "simulate", {"simulate", "measured"}) == "simulate";
  const toml::table* groups = r.table("groups");
  if (!r.failed()) {
    const fs::path file = fs::path(trace).is_absolute() ? fs::path(trace) : fs::path(path).parent_path() / trace;
    const auto type = file_type_at(file);
    if (!type) {
      r.fail("trace", type.error().message);
    } else if (*type == fs::file_type::not_found) {
      r.fail("trace", "no such file (relative to the scenario file's folder): " + file.string());
    } else if (*type != fs::file_type::regular) {
      r.fail("trace", file.string() + ": not a file");
    }
    if (!r.failed() && t.pp > 1) r.fail("trace", "a trace is one rank's program: it replays with parallel.pp = 1");
    // Absolute, so that a resolved copy of this scenario (docs/sweeps.md) finds it from anywhere.
    std::error_code ec;
    w.path = fs::weakly_canonical(file, ec).string();
    if (ec && !r.failed()) r.fail("trace", file.string() + ": " + ec.message());
    w.origin = origin_of(origins, &table, "workload", "trace", path);
  }
  if (Status s = r.finish(); !s) return s.error();
  if (groups != nullptr) {
    for (const auto& [key, value] : *groups) {
      const std::string name(key.str());
      if (!value.is_string()) {
        return Error{where(value, path) + ": workload.groups." + name +
                     ": expected a group kind name (a string: \"data_parallel\", \"tensor_parallel\", ...)"};
      }
      w.groups.push_back({name, value.value_or<std::string>(""), origin_of(origins, groups, "workload.groups", name, path)});
    }
  }
  return w;
}

Expected<Scenario> resolve(const toml::table& doc, const Overrides& origins, const std::string& path,
                           const Presets& presets, TableCache& tables);
void collect_places(const toml::table& table, const std::string& prefix, Overrides& places);
Overrides origins_of_copy(const Overrides& origins, const Overrides& places);

// Reads a parsed (and overridden) document into a Scenario: each section's keys through the schema
// (scenario_schema.hpp), then that section's cross-key rules, each a small function below. The
// first error wins and is returned as soon as its section ends.
class Resolver {
public:
  Resolver(const toml::table& doc, const Overrides& origins, const std::string& path, const Presets& presets,
           TableCache& tables)
      : doc_(doc), origins_(origins), path_(path), presets_(presets), tables_(tables) {}

  Expected<Scenario> resolve() {
    sc_.path = path_;
    if (Status s = read_top(); !s) return s.error();
    if (Status s = read_cluster(); !s) return s.error();
    if (Status s = read_fabric(); !s) return s.error();
    if (Status s = read_nccl(); !s) return s.error();
    if (Status s = read_degraded(); !s) return s.error();
    if (sweep_t_ != nullptr) {
      auto sweep = read_sweep(*sweep_t_, origins_);
      if (!sweep) return sweep.error();
      sc_.sweep = std::move(*sweep);
    }
    if (jobs_a_ != nullptr) {
      if (Status s = read_jobs(); !s) return s.error();
      return sc_;
    }
    if (model_t_ == nullptr) return sc_;
    sc_.training.emplace();
    if (Status s = read_model(); !s) return s.error();
    if (Status s = read_parallel(); !s) return s.error();
    if (Status s = read_training(); !s) return s.error();
    if (Status s = read_moe(); !s) return s.error();
    if (Status s = read_train(); !s) return s.error();
    if (workload_t_ != nullptr) {
      auto workload = read_workload(*workload_t_, origins_, path_, *sc_.training);
      if (!workload) return workload.error();
      sc_.workload = std::move(*workload);
    }
    return sc_;
  }

private:
  // The schema's keys of `section`, read from `r` into the scenario.
  KeyValues read_section(TableReader& r, const char* section) {
    return read_keys(r, scenario_section(section).keys, sc_);
  }
  const toml::table& section_or_empty(const toml::table* t) const { return t != nullptr ? *t : empty_; }

  Status read_top() {
    TableReader top(doc_, "", &origins_);
    read_section(top, "");
    cluster_t_ = top.table("cluster");
    fabric_t_ = top.table("fabric");
    nccl_t_ = top.table("nccl");
    model_t_ = top.table("model");
    training_t_ = top.table("training");
    parallel_t_ = top.table("parallel");
    moe_t_ = top.table("moe");
    train_t_ = top.table("train");
    sweep_t_ = top.table("sweep");
    workload_t_ = top.table("workload");
    jobs_a_ = top.array("job");
    degraded_a_ = top.array("degraded");
    if (!top.failed() && jobs_a_ != nullptr) {
      if (jobs_a_->empty()) top.fail("job", "give each job as a [[job]] table");
      if (model_t_ != nullptr) top.fail("model", "with [[job]] tables each job has its own [job.model], [job.training] and [job.parallel]");
      if (sweep_t_ != nullptr) top.fail("sweep", "a [sweep] varies one job's scenario: not with [[job]] tables");
    }
    if (!top.failed() && model_t_ == nullptr) {
      for (auto [table, name] : {std::pair{training_t_, "training"}, std::pair{parallel_t_, "parallel"},
                                 std::pair{moe_t_, "moe"}, std::pair{workload_t_, "workload"},
                                 std::pair{train_t_, "train"}}) {
        if (table != nullptr) {
          top.fail(name, "needs a [model] section");
          break;
        }
      }
    }
    if (!top.failed() && cluster_t_ == nullptr) top.fail("cluster", "missing table [cluster]");
    return top.finish();
  }

  Status read_cluster() {
    TableReader cluster(*cluster_t_, "cluster", &origins_);
    const KeyValues v = read_section(cluster, "cluster");
    if (Status s = cluster.finish(); !s) return s;
    if (Status s = check_node_choice(cluster, v); !s) return s;
    if (Status s = load_node(v); !s) return s;
    const std::int64_t gpus = std::int64_t{sc_.cluster.nodes} * sc_.cluster.node.gpus;  // both below 2^31
    if (gpus > kMaxGpus) {
      cluster.fail("nodes", std::to_string(sc_.cluster.nodes) + " nodes of " + std::to_string(sc_.cluster.node.gpus) +
                                " GPUs are " + std::to_string(gpus) + " GPUs, more than " + std::to_string(kMaxGpus) +
                                " (docs/limits.md)");
      return cluster.finish();
    }
    // The kernel table prices a training iteration's compute: read it only for one.
    if (model_t_ != nullptr || jobs_a_ != nullptr) return load_kernel_table();
    return Ok{};
  }

  // The node: a preset of calibration/nodes.toml (node_type) or described here ([cluster.node]).
  Status check_node_choice(TableReader& cluster, const KeyValues& v) {
    const bool inline_node = cluster_t_->get("node") != nullptr && cluster_t_->get("node")->is_table();
    if (inline_node && v.has("node_type")) cluster.fail("node_type", "give node_type or [cluster.node], not both");
    if (!inline_node) cluster.required_string("node_type");
    if (!cluster.failed() && sc_.kernel_table_setting.empty()) {
      cluster.fail("kernel_table", "expected \"auto\", \"roofline\" or a file");
    }
    return cluster.finish();
  }

  Status load_node(const KeyValues& v) {
    if (!v.has("node_type")) {
      auto node = read_node(*cluster_t_->get("node")->as_table(), "custom", "cluster.node", presets_, &origins_);
      if (!node) return node.error();
      sc_.cluster.node = *node;
      return Ok{};
    }
    const std::string& name = v.text("node_type");
    auto node = presets_.node(name);
    if (!node) {
      return Error{origin_of(origins_, cluster_t_, "cluster", "node_type", path_) + ": cluster.node_type = \"" + name +
                   "\": " + node.error().message};
    }
    sc_.cluster.node = *node;
    return Ok{};
  }

  Status load_kernel_table() {
    const std::string& setting = sc_.kernel_table_setting;
    auto table = resolve_kernel_table(setting, sc_.cluster.node.gpu, presets_, tables_);
    if (!table) {
      const std::string at = origin_of(origins_, cluster_t_, "cluster", "kernel_table", path_);
      return Error{at + ": cluster.kernel_table = \"" + setting + "\": " + table.error().message};
    }
    if (std::holds_alternative<std::string>(*table)) {
      sc_.roofline_reason = std::get<std::string>(*table);
    } else {
      sc_.kernel_table = std::get<std::shared_ptr<const calibration::KernelTable>>(*table);
    }
    return Ok{};
  }

  Status read_fabric() {
    TableReader fabric(section_or_empty(fabric_t_), "fabric", &origins_, path_);
    const KeyValues v = read_section(fabric, "fabric");
    network::FabricSpec& f = sc_.cluster.fabric;
    if (!fabric.failed() && v.has("levels") && f.levels == 1) {
      fabric.fail("levels", "use topology = \"single-switch\" for one switch; levels is 2 or 3 (0 = automatic)");
    }
    if (Status s = fabric.finish(); !s) return s;
    if (Status s = load_link(v); !s) return s;
    if (const std::string& spread = v.text("link_spread"); !spread.empty()) {
      auto loaded = presets_.link_spread(spread);
      if (!loaded) {
        return Error{origin_of(origins_, fabric_t_, "fabric", "link_spread", path_) + ": fabric.link_spread = \"" +
                     spread + "\": " + loaded.error().message};
      }
      sc_.cluster.fabric.spread = *loaded;
    }
    // One switch traversal: the link technology's latency unless given.
    if (!v.has("switch_latency_us")) f.switch_latency_s = f.link.latency_s;
    return Ok{};
  }

  // fabric.link: a preset name from calibration/links.toml (default: the technology of the NICs the
  // node type ships with), or a table defining a technology.
  Status load_link(const KeyValues& v) {
    const toml::node* given = fabric_t_ != nullptr ? fabric_t_->get("link") : nullptr;
    if (given != nullptr && given->is_table()) {
      auto link = read_link(*given->as_table(), "custom", "fabric.link", &origins_);
      if (!link) return link.error();
      sc_.cluster.fabric.link = *link;
      return Ok{};
    }
    const std::string name = v.has("link") ? v.text("link") : sc_.cluster.node.nic;
    auto link = presets_.link(name);
    if (!link) {
      return Error{origin_of(origins_, fabric_t_, "fabric", "link", path_) + ": fabric.link = \"" + name +
                   "\": " + link.error().message};
    }
    sc_.cluster.fabric.link = *link;
    return Ok{};
  }

  Status read_nccl() {
    TableReader nccl(section_or_empty(nccl_t_), "nccl", &origins_, path_);
    const KeyValues v = read_section(nccl, "nccl");
    if (Status s = nccl.finish(); !s) return s;
    const std::string& release = v.text("release");
    auto constants = presets_.nccl(release);
    if (!constants) {
      return Error{origin_of(origins_, nccl_t_, "nccl", "release", path_) + ": nccl.release = \"" + release + "\": " +
                   constants.error().message};
    }
    sc_.nccl = *constants;
    if (Status s = load_tuner_plugin(v.text("tuner_plugin")); !s) return s;
    return load_fit(v.text("fit"));
  }

  // nccl.tuner_plugin: regions NCCL's tuner asks first.
  Status load_tuner_plugin(const std::string& name) {
    if (name.empty()) return Ok{};
    auto plugin = presets_.tuner_plugin(name);
    if (!plugin) {
      return Error{origin_of(origins_, nccl_t_, "nccl", "tuner_plugin", path_) + ": nccl.tuner_plugin = \"" + name +
                   "\": " + plugin.error().message};
    }
    sc_.nccl.tuner_plugin = std::make_shared<const network::TunerPlugin>(std::move(*plugin));
    return Ok{};
  }

  // nccl.fit: a fabric fit, which must have been fitted on this cluster's node type and link.
  Status load_fit(const std::string& name) {
    if (name.empty()) return Ok{};
    network::FabricSpec& f = sc_.cluster.fabric;
    auto fit = presets_.fabric_fit(name);
    const std::string at = origin_of(origins_, nccl_t_, "nccl", "fit", path_);
    if (!fit) return Error{at + ": nccl.fit = \"" + name + "\": " + fit.error().message};
    if (fit->node_type != sc_.cluster.node.name || fit->link != f.link.name) {
      return Error{at + ": nccl.fit = \"" + name + "\": fitted on " + fit->node_type + " + " + fit->link +
                   ", but this cluster is " + sc_.cluster.node.name + " + " + f.link.name +
                   " (fit this fabric's own logs: commbound fit-fabric)"};
    }
    f.fit = *fit;
    return Ok{};
  }

  // [model]: a zoo name, or explicit dimensions (model_keys()); and the GPU it runs on.
  Status read_model() {
    TrainingSpec& t = *sc_.training;
    if (model_t_->contains("layers")) {
      auto m = model::read_model(*model_t_, "custom", "model", &origins_);
      if (!m) return m.error();
      t.model = *m;
    } else {
      TableReader model(*model_t_, "model", &origins_);
      const std::string name = model.required_string("name");
      if (Status s = model.finish(); !s) return s;
      auto m = load_model(presets_, name);
      if (!m) {
        return Error{origin_of(origins_, model_t_, "model", "name", path_) + ": model.name = \"" + name + "\": " +
                     m.error().message};
      }
      t.model = *m;
    }
    auto gpu = load_gpu(presets_, sc_.cluster.node.gpu);
    if (!gpu) return gpu.error();
    t.gpu = *gpu;
    return Ok{};
  }

  Status read_parallel() {
    TableReader par(section_or_empty(parallel_t_), "parallel", &origins_, path_);
    const KeyValues v = read_section(par, "parallel");
    if (Status s = par.finish(); !s) return s;
    apply_pp_layout(par);
    check_model_split(par);
    check_world_size(par);
    check_expert_split(par);
    check_tp_overlap(par);
    check_cp_comm(par);
    check_pp_schedule(par);
    if (!par.failed()) default_hsdp_shard(v);
    check_replica_groups(par);
    check_distributed_optimizer(par, v);
    return par.finish();
  }

  // A free-form layout sets each virtual stage's layers and the chunks per stage: virtual_stages,
  // if given too, must agree; the first/last keys are the other way to say it.
  void apply_pp_layout(TableReader& par) {
    TrainingSpec& t = *sc_.training;
    if (par.failed() || t.pp_layout.empty()) return;
    if (t.pp_first_stage_layers > 0 || t.pp_last_stage_layers > 0) {
      return par.fail("pp_layout", "give pp_layout or pp_first_stage_layers / pp_last_stage_layers, not both");
    }
    Expected<PipelineLayout> layout = parse_pp_layout(t.pp_layout, t.pp, t.model.layers, t.model.mtp_layers);
    if (!layout) return par.fail("pp_layout", layout.error().message + " (model " + t.model.name + ")");
    if (parallel_t_ != nullptr && parallel_t_->contains("virtual_stages") && t.virtual_stages != layout->chunks) {
      return par.fail("virtual_stages", "the pp_layout's " + std::to_string(layout->layers.size()) +
                                            " stages over pp = " + std::to_string(t.pp) + " are " +
                                            std::to_string(layout->chunks) + " chunks a stage: leave it out or give that");
    }
    t.virtual_stages = layout->chunks;
    t.vstage_layers = std::move(layout->layers);
  }

  // The layers split over the pipeline stages: by pp_layout, evenly (pp divides them), or with the
  // first and/or last stage set and the rest split evenly over at least one layer per other stage.
  void check_stage_layers(TableReader& par) const {
    const TrainingSpec& t = *sc_.training;
    if (!t.vstage_layers.empty()) return;
    const int layers = t.model.layers;
    const int first = t.pp_first_stage_layers, last = t.pp_last_stage_layers;
    if (first == 0 && last == 0) {
      if (!par.failed() && layers % t.pp != 0) par.fail("pp", "must divide the model's " + std::to_string(layers) + " layers");
      return;
    }
    const char* key = first > 0 ? "pp_first_stage_layers" : "pp_last_stage_layers";
    if (t.pp == 1) return par.fail(key, "needs pp > 1");
    if (first > 0 && last > 0 && t.pp == 2 && first + last != layers) {
      return par.fail(key, "with pp = 2 the first and last stages hold all " + std::to_string(layers) + " layers");
    }
    const int others = t.pp - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
    const int rest = layers - first - last;
    if (others == 0) return;
    if (rest < others || rest % others != 0) {
      par.fail(key, "leaves " + std::to_string(rest) + " of the model's " + std::to_string(layers) +
                        " layers, which do not split evenly over the other " + std::to_string(others) + " stages");
    }
  }

  // tp divides the heads and KV heads; pp (x virtual stages) the layers; cp the sequence.
  void check_model_split(TableReader& par) const {
    const TrainingSpec& t = *sc_.training;
    if (!par.failed() && t.model.heads % t.tp != 0) {
      par.fail("tp", "must divide the model's " + std::to_string(t.model.heads) + " attention heads");
    }
    if (!par.failed() && t.model.kv_heads % t.tp != 0) {
      par.fail("tp", "must divide the model's " + std::to_string(t.model.kv_heads) + " KV heads");
    }
    check_stage_layers(par);
    if (!par.failed() && t.virtual_stages > 1 && t.pp == 1) par.fail("virtual_stages", "interleaving needs pp > 1");
    for (int s = 0; !par.failed() && t.vstage_layers.empty() && s < t.pp; ++s) {
      if (t.stage_layers(s) % t.virtual_stages != 0) {
        par.fail("virtual_stages", "must divide the " + std::to_string(t.stage_layers(s)) + " layers of pipeline stage " +
                                       std::to_string(s));
      }
    }
    if (!par.failed() && t.cp > 1 && training_t_ != nullptr) {
      const toml::node* seq = training_t_->get("seq_len");
      if (seq != nullptr && seq->value_or<int64_t>(0) % t.cp != 0) par.fail("cp", "must divide training.seq_len");
    }
    // Context parallelism's blocks are priced as causal attentions of seq / cp tokens each; which of
    // them a window reaches is not modelled.
    if (!par.failed() && t.cp > 1 && t.model.sliding_window > 0) {
      par.fail("cp", "context parallelism with " + t.model.name + "'s sliding-window attention is not modelled");
    }
  }

  // World size = dp x tp x pp x cp: the model-parallel degrees divide the cluster, dp is the rest.
  void check_world_size(TableReader& par) {
    TrainingSpec& t = *sc_.training;
    const int world = sc_.cluster.gpus();
    const int model_parallel = t.tp * t.pp * t.cp;
    if (!par.failed() && world % model_parallel != 0) {
      par.fail(parallel_t_ != nullptr && parallel_t_->contains("tp") ? "tp" : "pp",
               "tp x pp x cp = " + std::to_string(model_parallel) + " does not divide the " + std::to_string(world) +
                   " GPUs of the cluster");
    }
    if (!par.failed()) t.dp = world / model_parallel;
  }

  // Expert parallelism: ep divides the routed experts and a stage's tp x cp x dp ranks (the
  // experts are folded over them, layout.hpp). An MoE model beside tp > 1 needs sequence
  // parallelism, as Megatron-Core requires (its token dispatcher routes each rank's sequence
  // shard); HSDP and DiLoCo are not modelled for experts.
  void check_expert_split(TableReader& par) const {
    const TrainingSpec& t = *sc_.training;
    if (par.failed()) return;
    const model::ModelSpec& m = t.model;
    if (!m.moe()) {
      for (auto [key, value] : {std::pair{"ep", t.ep}, std::pair{"expert_tp", t.expert_tp}}) {
        if (value > 1) return par.fail(key, t.model.name + " has no experts (set [model] experts for a mixture of experts)");
      }
      return;
    }
    const int stage_ranks = t.tp * t.cp * t.dp;
    if (m.experts % t.ep != 0) {
      par.fail("ep", "must divide the model's " + std::to_string(m.experts) + " routed experts");
    } else if (stage_ranks % t.ep != 0) {
      par.fail("ep", "must divide the tp x cp x dp = " + std::to_string(stage_ranks) + " GPUs of a pipeline stage");
    } else if (m.expert_ffn % t.expert_tp != 0) {
      par.fail("expert_tp", "must divide the experts' inner size " + std::to_string(m.expert_ffn));
    } else if (stage_ranks % (t.ep * t.expert_tp) != 0) {
      par.fail("expert_tp", "ep x expert_tp = " + std::to_string(t.ep * t.expert_tp) + " must divide the tp x cp x dp = " +
                                std::to_string(stage_ranks) + " GPUs of a pipeline stage");
    } else if (t.tp > 1 && !t.sequence_parallel) {
      par.fail("sequence_parallel", "an MoE model with tp > 1 needs sequence parallelism (as Megatron-Core requires)");
    } else if (t.strategy == Strategy::hsdp || t.strategy == Strategy::diloco) {
      par.fail("strategy", std::string("\"") + to_string(t.strategy) +
                               "\" is not modelled for a mixture of experts: use \"fsdp\" or \"ddp\"");
    }
  }

  // Transformer Engine overlaps sequence parallelism's all-gathers and reduce-scatters with GEMMs
  // (Megatron refuses --tp-comm-overlap without --sequence-parallel); at tp 1 there is nothing to
  // overlap and the key does nothing, as NeMo's overlap callback turns it off.
  void check_tp_overlap(TableReader& par) const {
    const TrainingSpec& t = *sc_.training;
    if (!par.failed() && t.tp_overlap && t.tp > 1 && !t.sequence_parallel) {
      par.fail("tp_overlap", "overlaps sequence parallelism's all-gathers and reduce-scatters: needs sequence_parallel = true");
    }
  }

  // ZB-H1 splits each layer's backward of a plain pipeline: not interleaved chunks (ZB-V and
  // interleaved zero-bubble schedules are other schedules), not an MoE layer's expert passes.
  void check_pp_schedule(TableReader& par) const {
    const TrainingSpec& t = *sc_.training;
    if (par.failed() || t.pp_schedule != PipelineSchedule::zb_h1) return;
    if (t.virtual_stages > 1) {
      par.fail("pp_schedule", "\"zb-h1\" is a schedule of one model chunk per stage: needs virtual_stages = 1 (is " +
                                  std::to_string(t.virtual_stages) + ")");
    } else if (t.model.experts > 0) {
      par.fail("pp_schedule", "\"zb-h1\" splits a dense layer's backward: " + t.model.name + " has experts");
    }
  }

  // Ulysses (a2a) hands each rank heads / cp of its tensor-parallel heads: Transformer Engine
  // asserts that cp divides the heads and the KV heads.
  void check_cp_comm(TableReader& par) const {
    const TrainingSpec& t = *sc_.training;
    if (par.failed() || t.cp_comm != CpComm::a2a || t.cp == 1) return;
    const model::ModelSpec& m = t.model;
    const int heads = m.heads / t.tp, kv_heads = m.kv_heads / t.tp;
    if (heads % t.cp != 0 || kv_heads % t.cp != 0) {
      par.fail("cp_comm", "\"a2a\" splits the heads over cp = " + std::to_string(t.cp) + ": " + m.name + " has " +
                              std::to_string(heads) + " heads and " + std::to_string(kv_heads) +
                              " KV heads per tensor-parallel rank, which cp must divide");
    }
  }

  // Default HSDP shard: the parameter replicas on one node (tp ranks share one replica).
  void default_hsdp_shard(const KeyValues& v) {
    TrainingSpec& t = *sc_.training;
    if (v.has("hsdp_shard")) return;
    const int per_node = sc_.cluster.node.gpus;
    t.hsdp_shard = std::gcd(std::max(1, per_node / t.tp), std::max(1, t.dp * t.cp));
  }

  // The distributed optimizer's buckets: Megatron-Core's default size (distributed_data_parallel.py:
  // max(40e6, 1e6 x the data-parallel size) parameters, so that each NCCL chunk stays bandwidth-bound),
  // and Megatron-LM's rule that gathering under the forward needs reducing under the backward
  // (megatron/training/arguments.py). Read under every strategy (sweeps), checked under ZeRO-1.
  void check_distributed_optimizer(TableReader& par, const KeyValues& v) {
    TrainingSpec& t = *sc_.training;
    constexpr double kMegatronMinBucketParams = 40e6, kMegatronBucketParamsPerDpRank = 1e6;
    if (!v.has("dp_bucket_params")) t.dp_bucket_params = std::max(kMegatronMinBucketParams, kMegatronBucketParamsPerDpRank * t.dp);
    if (par.failed() || !t.sharded() || t.zero_stage != 1) return;
    if (t.overlap_param_gather && !t.overlap_grad_reduce) {
      par.fail("overlap_param_gather", "gathers each bucket as its reduce-scatter left it: needs overlap_grad_reduce = "
                                       "true, as Megatron-LM requires (or set it false too)");
    } else if (t.overlap_param_gather_with_optimizer_step && (!t.overlap_param_gather || t.virtual_stages < 2)) {
      par.fail("overlap_param_gather_with_optimizer_step",
               "needs overlap_param_gather = true and an interleaved pipeline (virtual_stages > 1), as Megatron-LM requires");
    }
  }

  // HSDP shards and DiLoCo islands split the parameter replicas evenly. Both keys are read under
  // every strategy (so a sweep can set them beside other strategies) and checked under their own.
  void check_replica_groups(TableReader& par) const {
    const TrainingSpec& t = *sc_.training;
    if (!par.failed() && t.strategy == Strategy::hsdp && t.replicas() % t.hsdp_shard != 0) {
      par.fail("hsdp_shard", "must divide the " + std::to_string(t.replicas()) + " parameter replicas (dp x cp)");
    }
    if (!par.failed() && t.strategy == Strategy::diloco && t.replicas() % t.diloco_islands != 0) {
      par.fail("diloco_islands", "must divide the " + std::to_string(t.replicas()) + " parameter replicas (dp x cp)");
    }
  }

  // [moe]: the router of an MoE model. A histogram file is read here (relative to the scenario
  // file's folder, kept absolute so that a resolved copy finds it), and the routing checked against
  // the layout: the loads one per routed expert, enough experts with load for top_k.
  Status read_moe() {
    namespace fs = std::filesystem;
    TableReader r(section_or_empty(moe_t_), "moe", &origins_, path_);
    read_section(r, "moe");
    if (Status s = r.finish(); !s) return s;
    TrainingSpec& t = *sc_.training;
    if (moe_t_ != nullptr && !moe_t_->empty() && !t.model.moe()) {
      r.fail(std::string(moe_t_->begin()->first.str()), t.model.name + " has no experts ([model] experts)");
      return r.finish();
    }
    const bool histogram = t.routing.kind == moe::RoutingKind::histogram;
    if (histogram != !t.routing_histogram.empty()) {
      r.fail(histogram ? "routing" : "histogram", histogram ? "routing = \"histogram\" needs moe.histogram, the file of loads"
                                                            : "a histogram file needs routing = \"histogram\"");
      return r.finish();
    }
    if (histogram) {
      const fs::path given = t.routing_histogram;
      const fs::path file = given.is_absolute() ? given : fs::path(path_).parent_path() / given;
      auto loads = moe::read_expert_histogram(file.string(), t.model.experts);
      if (!loads) {
        r.fail("histogram", loads.error().message);
        return r.finish();
      }
      t.routing.histogram = std::move(*loads);
      std::error_code ec;
      t.routing_histogram = fs::weakly_canonical(file, ec).string();
    }
    if (!t.model.moe()) return Ok{};
    // Megatron-Core overlaps the shared experts with its all-to-all dispatcher only (DeepEP's
    // kernels are not supported).
    if (t.shared_expert_overlap && t.dispatcher != network::AllToAllMethod::nccl) {
      r.fail("shared_expert_overlap", "overlaps the shared experts with NCCL's all-to-all: needs dispatcher = \"nccl\"");
      return r.finish();
    }
    if (t.routing.pad_to_capacity && t.routing.capacity_factor <= 0) {
      r.fail("pad_to_capacity", "pads every expert slot to its capacity: needs capacity_factor > 0");
      return r.finish();
    }
    if (Status s = moe::check_routing(t.routing, t.moe_layer_shape()); !s) {
      r.fail(t.routing.kind == moe::RoutingKind::histogram ? "histogram" : "routing", s.error().message);
    }
    return r.finish();
  }

  Status read_train() {
    TableReader r(section_or_empty(train_t_), "train", &origins_, path_);
    read_section(r, "train");
    return r.finish();
  }

  Status read_training() {
    if (Status s = check_training_fidelity(); !s) return s;
    TableReader tr(section_or_empty(training_t_), "training", &origins_, path_);
    const KeyValues v = read_section(tr, "training");
    check_framework_model(tr);
    check_recompute_model(tr);
    check_precision(tr);
    if (Status s = tr.finish(); !s) return s;
    if (Status s = load_host(); !s) return s;
    if (Status s = check_attention_kernel(tr, v); !s) return s;
    // Megatron-LM's rule for bf16 parameters (megatron/training/arguments.py: "bfloat16 requires
    // gradient accumulation and all-reduce to be done in fp32"); PyTorch FSDP's default reduce_dtype
    // is the parameters' dtype.
    if (!v.has("grad_reduce_dtype")) sc_.training->grad_reduce_fp32 = sc_.training->zero_stage == 1;
    if (!tr.failed() && sc_.training->optimizer_state_bf16 &&
        !(sc_.training->sharded() && sc_.training->zero_stage == 1)) {
      tr.fail("optimizer_dtype", "bf16 state is Apex's distributed optimizer: it needs a sharded strategy at "
                                 "parallel.zero_stage = 1");
    }
    check_batches(tr, v);
    if (Status s = tr.finish(); !s) return s;
    return check_microbatch_group();
  }

  // Megatron-Core's interleaved schedule (pipeline_parallel/schedules.py) takes micro-batches in
  // groups of N per model chunk, pp <= N <= the micro-batches M, and refuses a last group of fewer
  // than pp (M mod N is 0 or at least pp): a stage's next chunk would wait for its input.
  Status check_microbatch_group() {
    const TrainingSpec& t = *sc_.training;
    if (t.pp_microbatch_group == 0) return Ok{};
    const int n = t.pp_microbatch_group, m = t.micro_batches;
    std::string reason;
    if (t.virtual_stages == 1) {
      reason = "groups the micro-batches of interleaved model chunks: needs virtual_stages > 1";
    } else if (n < t.pp || n > m) {
      reason = "must lie from pp = " + std::to_string(t.pp) + " to the " + std::to_string(m) + " micro-batches per replica";
    } else if (m % n != 0 && m % n < t.pp) {
      reason = "leaves a last group of " + std::to_string(m % n) + " of the " + std::to_string(m) +
               " micro-batches, fewer than pp = " + std::to_string(t.pp);
    }
    if (reason.empty()) return Ok{};
    TableReader par(section_or_empty(parallel_t_), "parallel", &origins_, path_);
    par.fail("pp_microbatch_group", reason);
    return par.finish();  // the error: the section's keys were checked when it was read
  }

  // A training iteration runs its collectives fluid: the step model's transfers of concurrent
  // collectives on the same ranks (an FSDP gather beside a reduce-scatter) are not kept apart, so
  // `step` is for `commbound collective` only, and refused here rather than silently ignored.
  Status check_training_fidelity() const {
    if (sc_.nccl_options.fidelity != network::Fidelity::step) return Ok{};
    return Error{origin_of(origins_, nccl_t_, "nccl", "fidelity", path_) +
                 ": nccl.fidelity = \"step\": a training run ([model]) simulates its collectives fluid; the step "
                 "model is for `commbound collective`"};
  }

  // pytorch-eager's recipe is the Llama architecture's kernels, read from the reference code.
  void check_framework_model(TableReader& tr) const {
    const TrainingSpec& t = *sc_.training;
    if (!tr.failed() && model::traits(t.framework).llama_architecture_only &&
        (t.model.mlp != model::Mlp::swiglu || t.model.norm != model::Norm::rmsnorm ||
         t.model.position != model::Position::rope || t.model.mla())) {
      tr.fail("framework", std::string(model::to_string(t.framework)) +
                               "'s recipe is the Llama architecture's (RMSNorm, rotary, SwiGLU, standard attention); " +
                               t.model.name + " is not");
    }
  }

  // mla_up_proj replays multi-head latent attention's up-projections; torchtitan's op-level
  // selection is written for standard attention's products.
  void check_recompute_model(TableReader& tr) const {
    const TrainingSpec& t = *sc_.training;
    if (tr.failed()) return;
    if (t.recompute == Recompute::mla_up_proj && !t.model.mla()) {
      tr.fail("activation_checkpointing", "mla_up_proj replays multi-head latent attention's up-projections: " +
                                              t.model.name + " has standard attention");
    } else if (t.recompute == Recompute::selective_op && t.model.mla()) {
      tr.fail("activation_checkpointing", "selective_op is not modelled for multi-head latent attention (" +
                                              t.model.name + "): use selective, mla_up_proj or full");
    }
  }

  // FP8 needs FP8 tensor cores, and runs through Transformer Engine or torch.compile (torchao).
  void check_precision(TableReader& tr) const {
    const TrainingSpec& t = *sc_.training;
    if (tr.failed() || t.precision != model::Precision::fp8) return;
    if (t.gpu.peak_fp8_flops_per_s <= 0) {
      tr.fail("precision", t.gpu.name + " has no FP8 tensor cores (no dense_fp8_TFLOPs in calibration/gpus.toml)");
    } else if (!model::traits(t.framework).runs_fp8) {
      tr.fail("precision", "FP8 training runs through Transformer Engine or torch.compile (torchao): use framework " +
                               model::frameworks_with(&model::FrameworkTraits::runs_fp8));
    }
  }

  Status load_host() {
    TrainingSpec& t = *sc_.training;
    auto host = load_host_costs(presets_, t.framework);
    if (!host) return host.error();
    t.host = *host;
    return Ok{};
  }

  // The attention the framework runs: Transformer Engine's cuDNN fused attention. PyTorch's SDPA
  // (eager and compiled alike: Inductor calls the same SDPA kernels) tries cuDNN's attention first
  // on compute capability 9.0, 10.0 and 10.3 GPUs once its cuDNN is newer than 9.15.0, and its flash
  // backend (FlashAttention-2) first elsewhere (aten/src/ATen/native/transformers/cuda/
  // sdp_utils.cpp, check_prefer_cudnn_attention, PyTorch 2.10 on; the 2.11 wheels bundle such a
  // cuDNN); releases before that ran FlashAttention-2 (a scenario of one says so:
  // attention_kernel = "flash2"). The flash backend needs compute capability 8.0 to 12.1
  // (sdp_utils.cpp, check_flash_attention_hardware_support): below it (V100) SDPA runs its
  // memory-efficient kernel, priced as our kernel of the same algorithm. Priced from the table's
  // rows of that kernel where it has them, else from our kernel of the same algorithm.
  static std::string default_attention_kernel(model::Framework f, const calibration::KernelTable* table,
                                              double compute_capability) {
    const model::FrameworkAttention attention = model::traits(f).attention;
    if (attention == model::FrameworkAttention::cudnn) return "cudnn";
    if (attention != model::FrameworkAttention::sdpa || table == nullptr) return "commbound";
    const bool prefers_cudnn = compute_capability == 9.0 || compute_capability == 10.0 || compute_capability == 10.3;
    if (prefers_cudnn && table->has_attention("cudnn")) return "cudnn";
    const bool runs_flash = compute_capability == 0 || (compute_capability >= 8.0 && compute_capability <= 12.1);
    if (runs_flash && table->has_attention("flash2")) return "flash2";
    return "commbound";
  }

  // A table that has attention rows must have some of the chosen kernel: pricing one kernel's
  // attention by another's rows, or by the roofline, would be silent and wrong.
  Status check_attention_kernel(TableReader& tr, const KeyValues& v) {
    TrainingSpec& t = *sc_.training;
    const auto& table = sc_.kernel_table;
    if (!v.has("attention_kernel")) {
      t.attention_kernel = default_attention_kernel(t.framework, table.get(), t.gpu.compute_capability);
    }
    if (!table || table->attentions().empty() || table->has_attention(t.attention_kernel)) return Ok{};
    if (v.has("attention_kernel")) {
      tr.fail("attention_kernel", table->display_path() + " has no [[attention]] rows of implementation \"" +
                                      t.attention_kernel + "\"");
      return tr.finish();
    }
    return Error{path_ + ": training.attention_kernel = \"" + t.attention_kernel + "\" (the default): " +
                 table->display_path() + " has no [[attention]] rows of implementation \"" + t.attention_kernel +
                 "\"; set training.attention_kernel"};
  }

  // global_batch or local_batch (one of them): the sequences of one replica split evenly into
  // micro-batches, and an interleaved pipeline's micro-batches a multiple of pp.
  void check_batches(TableReader& tr, const KeyValues& v) {
    TrainingSpec& t = *sc_.training;
    const bool has_global = v.has("global_batch");
    if (!tr.failed() && has_global && v.has("local_batch")) tr.fail("local_batch", "give global_batch or local_batch, not both");
    const long global = has_global ? v.integer("global_batch") : 0;
    const long per_replica = has_global ? global / t.dp : v.integer("local_batch");
    if (!tr.failed() && has_global && global % t.dp != 0) {
      tr.fail("global_batch", "must be divisible by the " + std::to_string(t.dp) + " data-parallel replicas");
    }
    const long micro = v.has("micro_batch") ? v.integer("micro_batch") : per_replica;
    if (!tr.failed() && per_replica / micro > kMaxMicroBatches) {
      tr.fail(v.has("micro_batch") ? "micro_batch" : has_global ? "global_batch" : "local_batch",
              std::to_string(per_replica) + " sequences per replica in micro-batches of " + std::to_string(micro) +
                  " are " + std::to_string(per_replica / micro) + " micro-batches, more than " +
                  std::to_string(kMaxMicroBatches) + " (docs/limits.md)");
    }
    if (!tr.failed() && per_replica % micro != 0) {
      tr.fail("micro_batch", "must divide the " + std::to_string(per_replica) + " sequences per replica");
    }
    if (!tr.failed() && t.virtual_stages > 1 && t.pp_microbatch_group == 0 && (per_replica / micro) % t.pp != 0) {
      tr.fail("micro_batch", "interleaved pipelines need micro-batches per replica (" +
                                 std::to_string(per_replica / micro) + ") to be a multiple of pp (" +
                                 std::to_string(t.pp) + "), or a parallel.pp_microbatch_group that suits them");
    }
    if (tr.failed()) return;
    t.global_batch = static_cast<int>(per_replica * t.dp);
    t.micro_batch = static_cast<int>(micro);
    t.micro_batches = static_cast<int>(per_replica / micro);
  }

  // [[degraded]] tables: each a GPU or NIC of the cluster that keeps a fraction of its speed.
  Status read_degraded() {
    std::map<std::tuple<DegradedPart::Kind, int, int>, std::string> seen;  // each part once: where it was given
    std::vector<DegradedPart> degraded;
    for (std::size_t k = 0; degraded_a_ != nullptr && k < degraded_a_->size(); ++k) {
      const toml::table* table = degraded_a_->get(k)->as_table();
      if (table == nullptr) {
        return Error{where(*degraded_a_->get(k), path_) + ": degraded: give each part as a [[degraded]] table"};
      }
      TableReader r(*table, "degraded[" + std::to_string(k) + "]", &origins_, path_);
      DegradedPart part;
      part.origin = where(*table, path_);
      const std::string kind = r.has("component") ? r.choice("component", "", {"gpu", "nic"}) : r.required_string("component");
      part.kind = kind == "nic" ? DegradedPart::Kind::nic : DegradedPart::Kind::gpu;
      part.node = static_cast<int>(r.required_integer("node", 0, sc_.cluster.nodes - 1));
      const int parts = part.kind == DegradedPart::Kind::nic ? sc_.cluster.node.nics : sc_.cluster.node.gpus;
      part.index = static_cast<int>(r.integer("index", 0, 0, parts - 1));
      part.speed_fraction = r.required_number("speed_fraction", 1e-3, 1);
      part.from_hour = r.number("from_hour", 0, 0, kMaxWindowHours);
      part.hours = r.number("hours", 0, 0, kMaxWindowHours);
      if (!r.failed() && r.has("hours") && part.hours <= 0) r.fail("hours", "must be above 0 (leave it out: to the end)");
      const auto [before, fresh] = seen.try_emplace({part.kind, part.node, part.index}, part.origin);
      if (!r.failed() && !fresh) {
        r.fail("node", kind + " " + std::to_string(part.index) + " of node " + std::to_string(part.node) +
                           " is degraded already (" + before->second + ")");
      }
      if (Status s = r.finish(); !s) return s;
      degraded.push_back(part);
    }
    set_degraded(sc_, std::move(degraded));
    return Ok{};
  }

  // [[job]] tables: each job's name, nodes and placement, and its training read as a scenario of
  // its own (this file's [cluster], [fabric] and [nccl] with the job's [job.model], [job.training],
  // [job.parallel], [job.moe], on a cluster of its node count). Jobs with node_ranges are placed
  // first, then the packed ones, then the spread ones, each group in file order.
  Status read_jobs() {
    struct Request {
      const toml::table* table;
      Job job;
      int nodes = 0;
      std::string placement;
      std::vector<std::pair<int, int>> ranges;
      std::string prefix;  // "job[k]": how errors and --set name its keys
    };
    std::vector<Request> requests;
    std::map<std::string, std::string> names;  // each job's name: where it was given
    for (std::size_t k = 0; k < jobs_a_->size(); ++k) {
      const toml::table* table = jobs_a_->get(k)->as_table();
      if (table == nullptr) return Error{where(*jobs_a_->get(k), path_) + ": job: give each job as a [[job]] table"};
      Request q{table, {}, 0, "", {}, "job[" + std::to_string(k) + "]"};
      TableReader jr(*table, q.prefix, &origins_, path_);
      q.job.name = jr.string("name", "job" + std::to_string(k + 1));
      q.job.origin = where(*table, path_);
      q.nodes = static_cast<int>(jr.required_integer("nodes", 1, sc_.cluster.nodes));
      q.placement = jr.choice("placement", "packed", {"packed", "spread"});
      if (const toml::array* ranges = jr.array("node_ranges"); ranges != nullptr) read_node_ranges(jr, *ranges, q);
      for (const char* section : {"model", "training", "parallel", "moe"}) jr.table(section);
      if (!jr.failed() && !jr.is_table("model")) jr.fail("model", "each [[job]] needs its [job.model]");
      if (!jr.failed() && !q.ranges.empty() && jr.has("placement")) {
        jr.fail("node_ranges", "give placement or node_ranges, not both");
      }
      if (const auto [before, fresh] = names.try_emplace(q.job.name, q.job.origin); !jr.failed() && !fresh) {
        jr.fail("name", "another [[job]] (" + before->second + ") has this name");
      }
      if (Status s = jr.finish(); !s) return s;
      requests.push_back(std::move(q));
    }
    std::vector<bool> taken(static_cast<std::size_t>(sc_.cluster.nodes), false);
    for (const char* pass : {"node_ranges", "packed", "spread"}) {
      for (Request& q : requests) {
        const std::string kind = q.ranges.empty() ? q.placement : "node_ranges";
        if (kind != pass) continue;
        auto placed = kind == "node_ranges" ? place_ranges(q.ranges, taken)
                      : kind == "packed"    ? place_packed(q.nodes, taken)
                                            : place_spread(q.nodes, taken);
        if (!placed) {
          TableReader jr(*q.table, q.prefix, &origins_, path_);
          jr.fail(kind == "node_ranges" ? "node_ranges" : "nodes", placed.error().message);
          return jr.finish();
        }
        q.job.nodes = std::move(*placed);
      }
    }
    for (Request& q : requests) {
      auto training = job_training(*q.table, q.prefix, q.nodes);
      if (!training) return training.error();
      q.job.training = std::move(*training);
      sc_.jobs.push_back(std::move(q.job));
    }
    return Ok{};
  }

  // node_ranges = [[first, last], ...]: inclusive node ranges whose sizes add up to the job's nodes.
  template <class Request>
  void read_node_ranges(TableReader& jr, const toml::array& ranges, Request& q) const {
    long total = 0;
    for (const toml::node& range : ranges) {
      const toml::array* pair = range.as_array();
      const bool two_integers = pair != nullptr && pair->size() == 2 && pair->get(0)->is_integer() && pair->get(1)->is_integer();
      if (!two_integers) {
        jr.fail("node_ranges", "expected [[first, last], ...]: inclusive ranges of node numbers");
        return;
      }
      const long first = pair->get(0)->value<long>().value_or(0), last = pair->get(1)->value<long>().value_or(0);
      if (first < 0 || last < first || last >= sc_.cluster.nodes) {
        jr.fail("node_ranges", "[" + std::to_string(first) + ", " + std::to_string(last) +
                                   "] is not a range of the cluster's nodes 0 to " + std::to_string(sc_.cluster.nodes - 1));
        return;
      }
      q.ranges.emplace_back(static_cast<int>(first), static_cast<int>(last));
      total += last - first + 1;
    }
    if (!jr.failed() && total != q.nodes) {
      jr.fail("node_ranges", "hold " + std::to_string(total) + " nodes; the job has nodes = " + std::to_string(q.nodes));
    }
  }

  // A job's training: this document without its [[job]] tables, with the job's own sections and
  // cluster.nodes set to its node count, resolved as a scenario. The copy keeps no source places
  // (toml++ copies none): its keys name their lines through the origins, the job's own keys the
  // lines of its [job.*] tables.
  Expected<TrainingSpec> job_training(const toml::table& job, const std::string& prefix, int nodes) const {
    toml::table doc = doc_;
    doc.erase("job");
    doc.erase("degraded");  // the cluster's parts: the cluster run maps them onto the job
    for (const char* section : {"model", "training", "parallel", "moe"}) {
      if (const toml::node* t = job.get(section)) doc.insert_or_assign(section, *t);
    }
    doc["cluster"].as_table()->insert_or_assign("nodes", nodes);
    Overrides places;
    collect_places(doc_, "", places);
    Overrides origins = origins_of_copy(origins_, places);
    Overrides job_places;
    collect_places(job, "", job_places);
    for (const auto& [key, place] : job_places) origins[key] = place;
    for (const auto& [key, set] : origins_) {  // --set job[k].training.seq_len=...
      if (key.rfind(prefix + ".", 0) == 0) origins[key.substr(prefix.size() + 1)] = set;
    }
    origins["cluster.nodes"] = origin_of(origins_, &job, prefix, "nodes", path_);
    auto resolved = commbound::sim::resolve(doc, origins, path_, presets_, tables_);
    if (!resolved) return resolved.error();
    return std::move(*resolved->training);
  }

  const toml::table& doc_;
  const Overrides& origins_;
  const std::string& path_;
  const Presets& presets_;
  TableCache& tables_;
  const toml::table empty_;
  const toml::table* cluster_t_ = nullptr;
  const toml::table* fabric_t_ = nullptr;
  const toml::table* nccl_t_ = nullptr;
  const toml::table* model_t_ = nullptr;
  const toml::table* training_t_ = nullptr;
  const toml::table* parallel_t_ = nullptr;
  const toml::table* moe_t_ = nullptr;
  const toml::table* train_t_ = nullptr;
  const toml::table* sweep_t_ = nullptr;
  const toml::table* workload_t_ = nullptr;
  const toml::array* jobs_a_ = nullptr;
  const toml::array* degraded_a_ = nullptr;
  Scenario sc_;
};

Expected<Scenario> resolve(const toml::table& doc, const Overrides& origins, const std::string& path,
                           const Presets& presets, TableCache& tables) {
  return Resolver(doc, origins, path, presets, tables).resolve();
}

// Where each key of `table` is written ("file:line"), by dotted key, for the keys that have a
// place in a file.
void collect_places(const toml::table& table, const std::string& prefix, Overrides& places) {
  for (const auto& [key, node] : table) {
    const std::string dotted = prefix + std::string(key.str());
    if (const std::string at = where(node, ""); !at.empty()) places.emplace(dotted, at);
    if (const toml::table* inner = node.as_table()) collect_places(*inner, dotted + ".", places);
  }
}

// The origins to resolve a copy of the document with: a copy keeps no source regions (toml++
// copies none), so its keys name their places in the file through the origins, as a --set is named.
Overrides origins_of_copy(const Overrides& origins, const Overrides& places) {
  Overrides out = places;
  for (const auto& [key, origin] : origins) out[key] = origin;
  return out;
}

}  // namespace

struct ScenarioFile::State {
  toml::table doc;
  Overrides origins;
  Presets presets;
  TableCache tables;
  Overrides places;  // every key's "file:line" in the file as parsed (collect_places)
};

ScenarioFile::ScenarioFile(std::shared_ptr<State> state, Scenario base) : state_(std::move(state)), base_(std::move(base)) {}

Expected<ScenarioFile> ScenarioFile::load(const std::string& path, const std::vector<std::string>& overrides,
                                          const Presets& presets) {
  auto parsed = parse_toml_file(path);
  if (!parsed) return one_line(parsed.error());
  auto state = std::make_shared<State>(State{std::move(*parsed), {}, presets, {}, {}});
  collect_places(state->doc, "", state->places);
  for (const auto& o : overrides) {
    if (Status s = apply_override(state->doc, o, state->origins); !s) return one_line(s.error());
  }
  auto base = resolve(state->doc, state->origins, path, state->presets, state->tables);
  if (!base) return one_line(base.error());
  return ScenarioFile(std::move(state), std::move(*base));
}

std::size_t ScenarioFile::points() const { return base_.sweep ? base_.sweep->values.size() : 1; }

std::string ScenarioFile::point_name(std::size_t i) const {
  return base_.sweep ? base_.sweep->names.at(i) : std::filesystem::path(base_.path).stem().string();
}

Expected<Scenario> ScenarioFile::point(std::size_t i, const std::vector<std::string>& overrides) const {
  if (!base_.sweep && overrides.empty()) return base_;
  auto resolved = resolve_with(overrides, true, i);
  if (!resolved) return one_line(resolved.error());
  return resolved;
}

Expected<Scenario> ScenarioFile::unswept(const std::vector<ScenarioEdit>& edits, const std::string& origin) const {
  toml::table doc = state_->doc;
  Overrides origins = origins_of_copy(state_->origins, state_->places);
  for (const ScenarioEdit& e : edits) {
    toml::table typed;
    insert_value(typed, "v", e.value);
    if (Status s = set_value(doc, e.key, *typed.get("v"), origin, origins); !s) return one_line(s.error());
  }
  auto resolved = resolve(doc, origins, base_.path, state_->presets, state_->tables);
  if (!resolved) return one_line(resolved.error());
  return resolved;
}

std::string ScenarioFile::origin(const std::string& key) const {
  if (const auto it = state_->origins.find(key); it != state_->origins.end()) return it->second;
  const toml::node_view<const toml::node> node = std::as_const(state_->doc).at_path(key);
  return node ? where(*node.node(), base_.path) : std::string();
}

Expected<Scenario> ScenarioFile::resolve_with(const std::vector<std::string>& overrides, bool apply_sweep,
                                              std::size_t i) const {
  toml::table doc = state_->doc;
  Overrides origins = origins_of_copy(state_->origins, state_->places);
  if (base_.sweep && apply_sweep) {
    const Sweep& sw = *base_.sweep;
    const toml::array& values = sw.values.at(i);
    // The point's values are copies (toml++ copies no source): name the --set that gave the sweep's
    // key or values, else the values' place in the file.
    const Overrides& sets = state_->origins;
    const auto set = std::find_if(sets.begin(), sets.end(), [](const auto& o) { return o.first.rfind("sweep.", 0) == 0; });
    const std::string at = set != sets.end() ? set->second : origin("sweep.values");
    for (std::size_t k = 0; k < sw.keys.size(); ++k) {
      const toml::node& v = *values.get(k);
      const std::string origin = (at.empty() ? base_.path : at) + ": sweep.values (" + sw.keys[k] + " = " + render(v) + ")";
      if (Status s = set_value(doc, sw.keys[k], v, origin, origins); !s) return s.error();
    }
  }
  for (const auto& o : overrides) {
    if (Status s = apply_override(doc, o, origins); !s) return s.error();
  }
  return resolve(doc, origins, base_.path, state_->presets, state_->tables);
}

Expected<Scenario> load_scenario(const std::string& path, const std::vector<std::string>& overrides,
                                 const Presets& presets) {
  auto file = ScenarioFile::load(path, overrides, presets);
  if (!file) return file.error();
  return file->scenario();
}

void set_degraded(Scenario& sc, std::vector<DegradedPart> parts) {
  sc.cluster.fabric.degraded_nics.clear();
  for (const DegradedPart& part : parts) {
    if (part.kind == DegradedPart::Kind::nic) sc.cluster.fabric.degraded_nics[{part.node, part.index}] = part.speed_fraction;
  }
  sc.degraded = std::move(parts);
}

}  // namespace commbound::sim
