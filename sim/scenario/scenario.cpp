#include "sim/scenario/scenario.hpp"

#include "calibration/base/file_type.hpp"
#include "calibration/base/number_text.hpp"
#include "calibration/table/table_reader.hpp"
#include "sim/scenario/model.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>
#include <utility>
#include <variant>
#include <sstream>

namespace commbound::sim {

using calibration::Overrides;
using calibration::parse_toml_file;
using calibration::TableReader;
using calibration::where;
using calibration::read_model;
namespace {

constexpr double kSecondsPerUs = 1e-6;

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
  try {
    parsed = toml::parse("v = " + value, origin);
  } catch (const toml::parse_error&) {
    // A number TOML cannot hold (an integer past 64 bits, a float past a double) is out of range,
    // not the bare string the fallback below would make of it.
    for (const Status& number : {parse_number<int64_t>(value).status(), parse_number<double>(value).status()}) {
      if (!number && number.error().message.rfind("out of range", 0) == 0) {
        return Error{origin + ": " + key + " = " + value + ": " + number.error().message};
      }
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

}  // namespace

// Validates the parsed (and overridden) document into a Scenario.
Expected<Scenario> resolve(const toml::table& doc, const Overrides& origins, const std::string& path,
                           const Presets& presets, TableCache& tables) {
  Scenario sc;
  sc.path = path;
  TableReader top(doc, "", &origins);
  sc.description = top.string("description", "");
  const toml::table empty;
  const toml::table* cluster_t = top.table("cluster");
  const toml::table* fabric_t = top.table("fabric");
  const toml::table* nccl_t = top.table("nccl");
  const toml::table* model_t = top.table("model");
  const toml::table* training_t = top.table("training");
  const toml::table* parallel_t = top.table("parallel");
  const toml::table* sweep_t = top.table("sweep");
  const toml::table* workload_t = top.table("workload");
  if (!top.failed() && (training_t != nullptr || parallel_t != nullptr || workload_t != nullptr) && model_t == nullptr) {
    top.fail(training_t != nullptr ? "training" : parallel_t != nullptr ? "parallel" : "workload", "needs a [model] section");
  }
  if (!top.failed() && cluster_t == nullptr) top.fail("cluster", "missing table [cluster]");
  if (Status s = top.finish(); !s) return s.error();

  // [cluster]
  TableReader cluster(*cluster_t, "cluster", &origins);
  // The node: a preset of calibration/nodes.toml (node_type) or described here ([cluster.node]).
  const toml::table* node_t = cluster_t->get("node") != nullptr && cluster_t->get("node")->is_table()
                                  ? cluster.table("node")
                                  : nullptr;
  if (node_t != nullptr && cluster.has("node_type")) cluster.fail("node_type", "give node_type or [cluster.node], not both");
  const std::string node_name = node_t != nullptr ? "custom" : cluster.required_string("node_type");
  sc.cluster.nodes = static_cast<int>(cluster.integer("nodes", 1, 1, network::kMaxNodes));
  const std::string kernel_table = cluster.string("kernel_table", "auto");
  if (!cluster.failed() && kernel_table.empty()) cluster.fail("kernel_table", "expected \"auto\", \"roofline\" or a file");
  sc.kernel_table_setting = kernel_table;
  if (Status s = cluster.finish(); !s) return s.error();
  auto node = node_t != nullptr ? read_node(*node_t, "custom", "cluster.node", presets, &origins) : presets.node(node_name);
  if (!node && node_t != nullptr) return node.error();
  if (!node) {
    return Error{origin_of(origins, cluster_t, "cluster", "node_type", path) + ": cluster.node_type = \"" + node_name +
                 "\": " + node.error().message};
  }
  sc.cluster.node = *node;
  // The kernel table prices a training iteration's compute: read it only for one.
  if (model_t != nullptr) {
    auto table = resolve_kernel_table(kernel_table, sc.cluster.node.gpu, presets, tables);
    if (!table) {
      const std::string at = origin_of(origins, cluster_t, "cluster", "kernel_table", path);
      return Error{at + ": cluster.kernel_table = \"" + kernel_table + "\": " + table.error().message};
    }
    if (std::holds_alternative<std::string>(*table)) {
      sc.roofline_reason = std::get<std::string>(*table);
    } else {
      sc.kernel_table = std::get<std::shared_ptr<const calibration::KernelTable>>(*table);
    }
  }

  // [fabric]
  TableReader fabric(fabric_t != nullptr ? *fabric_t : empty, "fabric", &origins);
  network::FabricSpec& f = sc.cluster.fabric;
  const std::string topo = fabric.choice("topology", "fat-tree", {"single-switch", "fat-tree", "rail-optimized"});
  f.topology = topo == "single-switch" ? network::Topology::single_switch
               : topo == "fat-tree"    ? network::Topology::fat_tree
                                       : network::Topology::rail_optimized;
  // fabric.link: a preset name from calibration/links.toml, or a table defining a technology.
  const bool custom_link = fabric_t != nullptr && fabric_t->get("link") != nullptr && fabric_t->get("link")->is_table();
  const toml::table* link_table = custom_link ? fabric.table("link") : nullptr;
  // Default: the technology of the NICs the node type ships with.
  const std::string link_name = custom_link ? "custom" : fabric.string("link", sc.cluster.node.nic);
  f.routing = fabric.choice("routing", "adaptive", {"adaptive", "ecmp"}) == "ecmp" ? network::Routing::ecmp
                                                                                  : network::Routing::adaptive;
  f.oversubscription = fabric.number("oversubscription", 1.0, 1.0, 64.0);
  f.switch_radix = static_cast<int>(fabric.integer("switch_radix", 64, 4, 1024));
  f.levels = static_cast<int>(fabric.integer("levels", 0, 0, 3));
  f.ecmp_seed = static_cast<unsigned>(fabric.integer("ecmp_seed", 0, 0, 1L << 31));
  f.sharp = fabric.boolean("sharp", false);
  const bool latency_given = fabric.has("switch_latency_us");
  const double switch_latency_us = fabric.number("switch_latency_us", 0, 0, 1e3);
  if (fabric_t != nullptr && fabric_t->contains("levels") && f.levels == 1) {
    fabric.fail("levels", "use topology = \"single-switch\" for one switch; levels is 2 or 3 (0 = automatic)");
  }
  if (Status s = fabric.finish(); !s) return s.error();
  auto link = custom_link ? read_link(*link_table, "custom", "fabric.link", &origins) : presets.link(link_name);
  if (!link && custom_link) return link.error();
  if (!link) {
    return Error{origin_of(origins, fabric_t, "fabric", "link", path) + ": fabric.link = \"" + link_name + "\": " + link.error().message};
  }
  f.link = *link;
  f.switch_latency_s = latency_given ? switch_latency_us * kSecondsPerUs : link->latency_s;

  // [nccl]
  TableReader nccl(nccl_t != nullptr ? *nccl_t : empty, "nccl", &origins);
  const std::string release = nccl.string("release", "2.30.7");
  const std::string algo = nccl.choice("algorithm", "auto", {"auto", "ring", "tree", "nvls", "nvlstree", "pat"});
  const std::string proto = nccl.choice("protocol", "auto", {"auto", "LL", "LL128", "Simple"});
  const std::string fid = nccl.choice("fidelity", "fluid", {"fluid", "step"});
  const std::string jitter = nccl.choice("jitter", "on", {"on", "off"});
  const std::string fit_name = nccl.string("fit", "");
  if (nccl.has("channels")) {
    sc.cluster.node.nccl_channels = static_cast<int>(nccl.integer("channels", 16, 1, 64));
  }
  if (Status s = nccl.finish(); !s) return s.error();
  if (algo != "auto") sc.nccl_options.algorithm = network::parse_algorithm(algo);
  if (proto != "auto") sc.nccl_options.protocol = network::parse_protocol(proto);
  sc.nccl_options.fidelity = *network::parse_fidelity(fid);
  sc.nccl_options.jitter = jitter == "on";
  auto constants = presets.nccl(release);
  if (!constants) {
    return Error{origin_of(origins, nccl_t, "nccl", "release", path) + ": nccl.release = \"" + release + "\": " +
                 constants.error().message};
  }
  sc.nccl = *constants;
  if (!fit_name.empty()) {
    auto fit = presets.fabric_fit(fit_name);
    const std::string at = origin_of(origins, nccl_t, "nccl", "fit", path);
    if (!fit) {
      return Error{at + ": nccl.fit = \"" + fit_name + "\": " + fit.error().message};
    }
    if (fit->node_type != sc.cluster.node.name || fit->link != f.link.name) {
      return Error{at + ": nccl.fit = \"" + fit_name + "\": fitted on " + fit->node_type + " + " + fit->link +
                   ", but this cluster is " + sc.cluster.node.name + " + " + f.link.name +
                   " (fit this fabric's own logs: commbound fit-fabric)"};
    }
    f.fit = *fit;
  }

  if (sweep_t != nullptr) {
    TableReader sweep(*sweep_t, "sweep", &origins);
    Sweep sw;
    const toml::node* key = sweep_t->get("key");
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
      if (!shaped) {
        sweep.fail("values", "grid = \"cartesian\" needs one array of values per key (" + std::to_string(sw.keys.size()) + ")");
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
    sc.sweep = sw;
  }
  if (model_t == nullptr) return sc;

  // [model], [training], [parallel]
  TrainingSpec t;
  // [model]: a zoo name, or explicit dimensions (layers, hidden, heads, kv_heads, ffn, vocab).
  if (model_t->contains("layers")) {
    auto m = read_model(*model_t, "custom", "model", &origins);
    if (!m) return m.error();
    t.model = *m;
  } else {
    TableReader model(*model_t, "model", &origins);
    const std::string model_name = model.required_string("name");
    if (Status s = model.finish(); !s) return s.error();
    auto m = load_model(presets, model_name);
    if (!m) return Error{origin_of(origins, model_t, "model", "name", path) + ": model.name = \"" + model_name + "\": " + m.error().message};
    t.model = *m;
  }
  auto gpu = load_gpu(presets, sc.cluster.node.gpu);
  if (!gpu) return gpu.error();
  t.gpu = *gpu;

  TableReader par(parallel_t != nullptr ? *parallel_t : empty, "parallel", &origins);
  const std::string strategy = par.choice("strategy", "fsdp", {"fsdp", "hsdp", "ddp", "diloco"});
  t.strategy = strategy == "ddp"      ? Strategy::ddp
               : strategy == "hsdp"   ? Strategy::hsdp
               : strategy == "diloco" ? Strategy::diloco
                                      : Strategy::fsdp;
  t.zero_stage = static_cast<int>(par.integer("zero_stage", 2, 2, 3));
  t.tp = static_cast<int>(par.integer("tp", 1, 1, 1024));
  t.pp = static_cast<int>(par.integer("pp", 1, 1, 1024));
  t.cp = static_cast<int>(par.integer("cp", 1, 1, 1024));
  t.sequence_parallel = par.boolean("sequence_parallel", false);
  t.max_inflight_allgathers = static_cast<int>(par.integer("max_inflight_allgathers", 2, 1, 64));
  t.ddp_bucket_bytes = par.number("ddp_bucket_MB", 25, 1, 1e5) * 1e6;
  if (!par.failed() && t.model.heads % t.tp != 0) {
    par.fail("tp", "must divide the model's " + std::to_string(t.model.heads) + " attention heads");
  }
  if (!par.failed() && t.model.kv_heads % t.tp != 0) {
    par.fail("tp", "must divide the model's " + std::to_string(t.model.kv_heads) + " KV heads");
  }
  t.virtual_stages = static_cast<int>(par.integer("virtual_stages", 1, 1, 1024));
  if (!par.failed() && t.model.layers % t.pp != 0) {
    par.fail("pp", "must divide the model's " + std::to_string(t.model.layers) + " layers");
  }
  if (!par.failed() && t.virtual_stages > 1 && t.pp == 1) par.fail("virtual_stages", "interleaving needs pp > 1");
  if (!par.failed() && t.model.layers % (t.pp * t.virtual_stages) != 0) {
    par.fail("virtual_stages", "pp x virtual_stages must divide the model's " + std::to_string(t.model.layers) +
                                   " layers");
  }
  if (!par.failed() && t.cp > 1 && training_t != nullptr) {
    const toml::node* seq = training_t->get("seq_len");
    if (seq != nullptr && seq->value_or<int64_t>(0) % t.cp != 0) par.fail("cp", "must divide training.seq_len");
  }
  const int world = sc.cluster.gpus();
  const int model_parallel = t.tp * t.pp * t.cp;
  if (!par.failed() && world % model_parallel != 0) {
    par.fail(parallel_t != nullptr && parallel_t->contains("tp") ? "tp" : "pp",
             "tp x pp x cp = " + std::to_string(model_parallel) + " does not divide the " + std::to_string(world) +
                 " GPUs of the cluster");
  }
  const int per_node = sc.cluster.node.gpus;
  // Default HSDP shard: the parameter replicas on one node (tp ranks share one replica).
  const long shard_default = std::gcd(std::max(1, per_node / t.tp), std::max(1, world / model_parallel * t.cp));
  t.hsdp_shard = static_cast<int>(par.integer("hsdp_shard", shard_default, 1, 1 << 20));
  t.dp = world / model_parallel;
  if (!par.failed() && t.strategy == Strategy::hsdp && t.replicas() % t.hsdp_shard != 0) {
    par.fail("hsdp_shard", "must divide the " + std::to_string(t.replicas()) + " parameter replicas (dp x cp)");
  }
  t.diloco_islands = static_cast<int>(par.integer("diloco_islands", 8, 1, 1 << 20));
  t.diloco_sync_every = static_cast<int>(par.integer("diloco_sync_every", 500, 1, 1L << 30));
  // Like hsdp_shard, read under every strategy (so a sweep can set them beside other strategies) and
  // used by diloco only.
  if (!par.failed() && t.strategy == Strategy::diloco && t.replicas() % t.diloco_islands != 0) {
    par.fail("diloco_islands", "must divide the " + std::to_string(t.replicas()) + " parameter replicas (dp x cp)");
  }
  if (Status s = par.finish(); !s) return s.error();

  TableReader tr(training_t != nullptr ? *training_t : empty, "training", &origins);
  t.seq_len = static_cast<int>(tr.integer("seq_len", 4096, 1, 1 << 24));
  const bool has_global = tr.has("global_batch");
  const bool has_local = tr.has("local_batch");
  const long global = tr.integer("global_batch", 0, 1, 1L << 40);
  const long local = tr.integer("local_batch", 2, 1, 1L << 30);
  // activation_checkpointing: "none" | "selective" | "selective_op" | "full"; the boolean of
  // earlier scenarios still reads (true = "full", false = "none").
  const toml::node* recompute = training_t != nullptr ? training_t->get("activation_checkpointing") : nullptr;
  if (recompute != nullptr && recompute->is_boolean()) {
    t.recompute = tr.boolean("activation_checkpointing", false) ? Recompute::full : Recompute::none;
  } else {
    const std::string r = tr.choice("activation_checkpointing", "none", {"none", "selective", "selective_op", "full"});
    t.recompute = r == "full"           ? Recompute::full
                  : r == "selective"    ? Recompute::selective
                  : r == "selective_op" ? Recompute::selective_op
                                        : Recompute::none;
  }
  t.warmup_iterations = static_cast<int>(tr.integer("warmup_iterations", 0, 0, 100));
  // framework: whose kernels and host a step runs (calibration/table/framework_recipe.hpp);
  // Megatron-LM + Transformer Engine runs cuDNN's fused attention unless told otherwise.
  t.framework = *calibration::parse_framework(tr.choice("framework", "fused", calibration::framework_names()));
  if (!tr.failed() && t.framework == calibration::Framework::pytorch_eager &&
      (t.model.mlp != calibration::Mlp::swiglu || t.model.norm != calibration::Norm::rmsnorm ||
       t.model.position != calibration::Position::rope)) {
    tr.fail("framework", "pytorch-eager's recipe is the Llama architecture's (RMSNorm, rotary, SwiGLU); " + t.model.name +
                             " is not");
  }
  t.precision = *calibration::parse_precision(tr.choice("precision", "bf16", {"bf16", "fp8"}));
  if (!tr.failed() && t.precision == calibration::Precision::fp8) {
    if (t.gpu.peak_fp8_flops_per_s <= 0) {
      tr.fail("precision", t.gpu.name + " has no FP8 tensor cores (no dense_fp8_TFLOPs in calibration/gpus.toml)");
    } else if (t.framework == calibration::Framework::pytorch_eager) {
      tr.fail("precision", "FP8 training runs through Transformer Engine or torch.compile (torchao): use framework "
                           "\"megatron-te\", \"pytorch-compile\" or \"fused\"");
    }
  }
  if (!tr.failed()) {
    auto host = load_host_costs(presets, t.framework);
    if (!host) return host.error();
    t.host = *host;
  }
  t.attention_kernel = tr.choice("attention_kernel", t.framework == calibration::Framework::megatron_te ? "cudnn" : "commbound",
                                 {"commbound", "cudnn"});
  // A table that has attention rows must have some of the chosen kernel: pricing one kernel's
  // attention by another's rows, or by the roofline, would be silent and wrong.
  if (!tr.failed() && sc.kernel_table && !sc.kernel_table->attentions().empty() &&
      !sc.kernel_table->has_attention(t.attention_kernel)) {
    if (tr.has("attention_kernel")) {
      tr.fail("attention_kernel", sc.kernel_table->display_path() + " has no [[attention]] rows of implementation \"" +
                                      t.attention_kernel + "\"");
    } else {
      return Error{path + ": training.attention_kernel = \"commbound\" (the default): " + sc.kernel_table->display_path() +
                   " has no [[attention]] rows of implementation \"commbound\"; set training.attention_kernel"};
    }
  }
  if (!tr.failed() && has_global && has_local) tr.fail("local_batch", "give global_batch or local_batch, not both");
  const long per_replica = has_global ? global / t.dp : local;
  if (!tr.failed() && has_global && global % t.dp != 0) {
    tr.fail("global_batch", "must be divisible by the " + std::to_string(t.dp) + " data-parallel replicas");
  }
  const long micro = tr.integer("micro_batch", per_replica, 1, 1L << 30);
  if (!tr.failed() && per_replica % micro != 0) {
    tr.fail("micro_batch", "must divide the " + std::to_string(per_replica) + " sequences per replica");
  }
  if (!tr.failed() && t.virtual_stages > 1 && (per_replica / micro) % t.pp != 0) {
    tr.fail("micro_batch", "interleaved pipelines need micro-batches per replica (" + std::to_string(per_replica / micro) +
                               ") to be a multiple of pp (" + std::to_string(t.pp) + ")");
  }
  if (Status s = tr.finish(); !s) return s.error();
  t.global_batch = static_cast<int>(per_replica * t.dp);
  t.micro_batch = static_cast<int>(micro);
  t.micro_batches = static_cast<int>(per_replica / micro);
  sc.training = t;
  if (workload_t != nullptr) {
    auto workload = read_workload(*workload_t, origins, path, t);
    if (!workload) return workload.error();
    sc.workload = std::move(*workload);
  }
  return sc;
}

struct ScenarioFile::State {
  toml::table doc;
  Overrides origins;
  Presets presets;
  TableCache tables;
};

ScenarioFile::ScenarioFile(std::shared_ptr<State> state, Scenario base) : state_(std::move(state)), base_(std::move(base)) {}

Expected<ScenarioFile> ScenarioFile::load(const std::string& path, const std::vector<std::string>& overrides,
                                          const Presets& presets) {
  auto parsed = parse_toml_file(path);
  if (!parsed) return parsed.error();
  auto state = std::make_shared<State>(State{std::move(*parsed), {}, presets, {}});
  for (const auto& o : overrides) {
    if (Status s = apply_override(state->doc, o, state->origins); !s) return s.error();
  }
  auto base = resolve(state->doc, state->origins, path, state->presets, state->tables);
  if (!base) return base.error();
  return ScenarioFile(std::move(state), std::move(*base));
}

std::size_t ScenarioFile::points() const { return base_.sweep ? base_.sweep->values.size() : 1; }

std::string ScenarioFile::point_name(std::size_t i) const {
  return base_.sweep ? base_.sweep->names.at(i) : std::filesystem::path(base_.path).stem().string();
}

Expected<Scenario> ScenarioFile::point(std::size_t i, const std::vector<std::string>& overrides) const {
  if (!base_.sweep && overrides.empty()) return base_;
  return resolve_with(overrides, true, i);
}

Expected<Scenario> ScenarioFile::unswept(const std::vector<std::string>& overrides) const {
  return resolve_with(overrides, false, 0);
}

std::string ScenarioFile::origin(const std::string& key) const {
  if (const auto it = state_->origins.find(key); it != state_->origins.end()) return it->second;
  const toml::node_view<const toml::node> node = std::as_const(state_->doc).at_path(key);
  return node ? where(*node.node(), base_.path) : std::string();
}

Expected<Scenario> ScenarioFile::resolve_with(const std::vector<std::string>& overrides, bool apply_sweep,
                                              std::size_t i) const {
  toml::table doc = state_->doc;
  Overrides origins = state_->origins;
  if (base_.sweep && apply_sweep) {
    const Sweep& sw = *base_.sweep;
    const toml::array& values = sw.values.at(i);
    // The point's values are copies (toml++ copies no source): name the --set that gave the sweep's
    // key or values, else the values' place in the file.
    const auto set = std::find_if(origins.begin(), origins.end(), [](const auto& o) { return o.first.rfind("sweep.", 0) == 0; });
    const std::string at = set != origins.end() ? set->second : origin("sweep.values");
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

}  // namespace commbound::sim
