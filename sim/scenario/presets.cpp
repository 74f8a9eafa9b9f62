#include "sim/scenario/presets.hpp"

#include "core/file_type.hpp"
#include "core/number_text.hpp"
#include "core/units.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

// Key tables are written with designated initializers that leave the fields a key does not use
// at their defaults; GCC warns about each omitted field all the same.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace commbound::sim {

namespace {

// The named sub-table of a preset file, or an error listing the names it has.
Expected<const toml::table*> preset_table(const toml::table& file, const std::filesystem::path& path,
                                          const std::string& name, const std::string& what) {
  const toml::node* node = file.get(name);
  if (node != nullptr && node->is_table()) return node->as_table();
  std::string names;
  for (const auto& [key, value] : file) {
    if (value.is_table()) names += (names.empty() ? "" : ", ") + std::string(key.str());
  }
  return Error{path.string() + ": no " + what + " named \"" + name + "\" (known: " + names + ")"};
}

// " a b c": the files of `dir` ending in `extension`, by name (the stem when `stems`), sorted; ""
// when the folder is missing or cannot be listed (the list only helps an error message).
std::string files_in(const std::filesystem::path& dir, const std::string& extension, bool stems) {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::filesystem::path& p = it->path();
    if (p.extension() == extension) names.push_back(stems ? p.stem().string() : p.filename().string());
  }
  std::sort(names.begin(), names.end());
  std::string list;
  for (const auto& n : names) list += " " + n;
  return list;
}

}  // namespace

std::filesystem::path default_data_dir() {
  std::array<char, 4096> buf{};
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return ".";  // no /proc: the working directory, as a source checkout lays it out
  return std::filesystem::path(std::string(buf.data(), static_cast<std::size_t>(n))).parent_path().parent_path() /
         "share" / "commbound";
}

std::filesystem::path default_calibration_dir() { return default_data_dir() / "calibration"; }

const std::vector<KeySpec<network::LinkTech>>& link_keys() {
  using network::LinkTech;
  static const std::vector<KeySpec<LinkTech>> keys = {
      {.key = "name", .derived = "the preset's name, or `custom`",
       .doc = "how reports and `nccl.fit` name the link; a resolved scenario keeps its preset's name here",
       .set = KeyField<&LinkTech::name>::set, .get = KeyField<&LinkTech::name>::get},
      {.key = "description", .fallback = KeyValue{std::string()}, .doc = "free text"},
      {.key = "bandwidth_GBps", .type = KeyType::number, .si_per_unit = kBytesPerGB, .lower = 1e-3, .upper = 1e6,
       .required = true, .doc = "signalling rate per direction",
       .set = KeyField<&LinkTech::bw_bytes_per_s>::set, .get = KeyField<&LinkTech::bw_bytes_per_s>::get},
      {.key = "efficiency", .type = KeyType::number, .lower = 0.01, .upper = 1.0, .required = true,
       .doc = "achievable payload fraction of the bandwidth (headers, flow control)",
       .set = KeyField<&LinkTech::efficiency>::set, .get = KeyField<&LinkTech::efficiency>::get},
      {.key = "latency_us", .type = KeyType::number, .si_per_unit = kSecondsPerUs, .lower = 0.0, .upper = 1e6,
       .required = true, .doc = "one traversal of the link (for fabric technologies: one switch traversal)",
       .set = KeyField<&LinkTech::latency_s>::set, .get = KeyField<&LinkTech::latency_s>::get},
      {.key = "nccl_net", .type = KeyType::choice, .fallback = KeyValue{std::string("IB")},
       .names = names_of({network::NcclNet::ib, network::NcclNet::libfabric}),
       .doc = "fabric links: the transport NCCL runs over it, as NCCL_NET names it: `IB` (NCCL's IB verbs: "
              "InfiniBand and RoCE) or `Libfabric` (the aws-ofi-nccl plugin over AWS EFA); validate compares a "
              "scenario only with multi-node measurements made over the same transport",
       .set = KeyEnum<network::parse_nccl_net, &LinkTech::nccl_net>::set,
       .get = [](const LinkTech& t, double si) -> std::optional<KeyValue> {  // written only when not the default
         if (t.nccl_net == network::NcclNet::ib) return std::nullopt;
         return KeyEnum<network::parse_nccl_net, &LinkTech::nccl_net>::get(t, si);
       }},
  };
  return keys;
}

Expected<network::LinkTech> read_link(const toml::table& table, const std::string& name, const std::string& prefix,
                                      const Overrides* overrides) {
  TableReader r(table, prefix, overrides);
  network::LinkTech t;
  t.name = name;
  read_keys(r, link_keys(), t);
  if (Status s = r.finish(); !s) return s.error();
  return t;
}

Expected<network::LinkTech> Presets::link(const std::string& name) const {
  const auto path = dir_ / "links.toml";
  auto file = parse_toml_file(path);
  if (!file) return file.error();
  auto table = preset_table(*file, path, name, "link technology");
  if (!table) return table.error();
  return read_link(**table, name, name);
}

const std::vector<KeySpec<network::NodeType>>& node_keys() {
  using network::NodeType;
  // The links are presets by name: read_node loads them; a writer names them.
  auto nvlink_name = [](const NodeType& n, double) -> std::optional<KeyValue> { return KeyValue{n.nvlink.name}; };
  auto pcie_name = [](const NodeType& n, double) -> std::optional<KeyValue> { return KeyValue{n.pcie.name}; };
  static const std::vector<KeySpec<NodeType>> keys = {
      {.key = "name", .derived = "the preset's name, or `custom`",
       .doc = "how reports and `nccl.fit` name the node; a resolved scenario keeps its preset's name here",
       .set = KeyField<&NodeType::name>::set, .get = KeyField<&NodeType::name>::get},
      {.key = "description", .fallback = KeyValue{std::string()}, .doc = "free text"},
      {.key = "gpu", .required = true, .doc = "a `calibration/gpus.toml` preset",
       .set = KeyField<&NodeType::gpu>::set, .get = KeyField<&NodeType::gpu>::get},
      {.key = "gpus", .type = KeyType::integer, .lower = 1, .upper = 1024, .fallback = KeyValue{8L},
       .doc = "GPUs per node", .set = KeyField<&NodeType::gpus>::set, .get = KeyField<&NodeType::gpus>::get},
      {.key = "nics", .type = KeyType::integer, .lower = 1, .upper = 1024, .fallback = KeyValue{8L},
       .doc = "NICs on the compute fabric (GPUs a multiple of NICs); NIC k serves rail k",
       .set = KeyField<&NodeType::nics>::set, .get = KeyField<&NodeType::nics>::get},
      {.key = "nvlink", .required = true, .doc = "a `calibration/links.toml` preset: each GPU's NVLink, per direction",
       .get = nvlink_name},
      {.key = "pcie", .required = true, .doc = "a `calibration/links.toml` preset: GPU to NIC", .get = pcie_name},
      {.key = "nvlink_topology", .type = KeyType::choice, .fallback = KeyValue{std::string("switch")},
       .names = names_of({network::NvlinkTopology::nvswitch, network::NvlinkTopology::mesh}),
       .doc = "`switch`: every GPU on an NVSwitch at the `nvlink` rate; `mesh`: no switch, one link per GPU pair "
              "at the `nvlink` rate / (gpus - 1), up to 4 GPUs, `nvls = false`",
       .set = KeyEnum<network::parse_nvlink_topology, &NodeType::nvlink_topology>::set,
       .get = KeyEnum<network::parse_nvlink_topology, &NodeType::nvlink_topology>::get},
      {.key = "sm_arch", .type = KeyType::integer, .lower = 60, .upper = 200, .fallback = KeyValue{90L},
       .doc = "80 Ampere, 90 Hopper: selects NCCL's per-architecture constants",
       .set = KeyField<&NodeType::sm_arch>::set, .get = KeyField<&NodeType::sm_arch>::get},
      {.key = "nvls", .type = KeyType::boolean, .fallback = KeyValue{false},
       .doc = "NVSwitch with in-switch reduction (NVLink SHARP)",
       .set = KeyField<&NodeType::nvls>::set, .get = KeyField<&NodeType::nvls>::get},
      {.key = "nccl_channels", .type = KeyType::integer, .lower = 1, .upper = 64, .fallback = KeyValue{16L},
       .doc = "channels NCCL runs per collective on this node type",
       .set = KeyField<&NodeType::nccl_channels>::set, .get = KeyField<&NodeType::nccl_channels>::get},
      {.key = "nic", .required = true, .doc = "a `calibration/links.toml` preset: the NICs as shipped (the fabric's default link)",
       .set = KeyField<&NodeType::nic>::set, .get = KeyField<&NodeType::nic>::get},
      {.key = "host_cpu", .type = KeyType::choice, .fallback = KeyValue{std::string("intel")},
       .names = names_of({network::HostCpu::intel, network::HostCpu::amd, network::HostCpu::other}),
       .doc = "selects NCCL's netOverhead (1 us Intel, 2 us AMD)",
       .set = KeyEnum<network::parse_host_cpu, &NodeType::host_cpu>::set,
       .get = KeyEnum<network::parse_host_cpu, &NodeType::host_cpu>::get},
  };
  return keys;
}

Expected<network::NodeType> read_node(const toml::table& table, const std::string& name, const std::string& prefix,
                                      const Presets& presets, const Overrides* overrides) {
  TableReader r(table, prefix, overrides);
  network::NodeType n;
  n.name = name;
  const KeyValues v = read_keys(r, node_keys(), n);
  if (!r.failed() && n.gpus % n.nics != 0) r.fail("nics", "GPUs per node (" + std::to_string(n.gpus) + ") must be a multiple of NICs");
  if (!r.failed()) {
    if (std::string why = n.nvlink_topology_problem(); !why.empty()) r.fail("nvlink_topology", why);
  }
  if (Status s = r.finish(); !s) return s.error();
  const std::string& nvlink = v.text("nvlink");
  const std::string& pcie = v.text("pcie");
  auto nv = presets.link(nvlink);
  if (!nv) return Error{prefix + ".nvlink = \"" + nvlink + "\": " + nv.error().message};
  auto pc = presets.link(pcie);
  if (!pc) return Error{prefix + ".pcie = \"" + pcie + "\": " + pc.error().message};
  n.nvlink = *nv;
  n.pcie = *pc;
  return n;
}

Expected<network::NodeType> Presets::node(const std::string& name) const {
  const auto path = dir_ / "nodes.toml";
  auto file = parse_toml_file(path);
  if (!file) return file.error();
  auto table = preset_table(*file, path, name, "node type");
  if (!table) return table.error();
  return read_node(**table, name, name, *this);
}

Expected<network::LinkSpread> Presets::link_spread(const std::string& name) const {
  // A pairwise sweep of N nodes has N(N-1)/2 pairs: 2^20 lines is a sweep of about 1450 nodes.
  constexpr std::size_t kMaxPairs = 1u << 20;
  const auto dir = dir_ / "fabric" / "spread";
  const auto path = dir / (name + ".txt");
  auto type = file_type_at(path);
  if (!type) return type.error();
  if (name.empty() || name.find('/') != std::string::npos || *type != std::filesystem::file_type::regular) {
    return Error{"no link spread named \"" + name + "\" (have:" + files_in(dir, ".txt", true) + ")"};
  }
  std::ifstream in(path);
  std::vector<double> times_s;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const auto last = line.find_last_not_of(" \t\r");
    const std::string text = line.substr(first, last - first + 1);
    auto us = parse_number<double>(text);
    if (!us || !(*us > 0)) {
      return Error{fmt::format("{}:{}: \"{}\": a pair's time in us, a positive number{}", path.string(), number, text,
                               us ? "" : " (" + us.error().message + ")")};
    }
    if (times_s.size() == kMaxPairs) return Error{fmt::format("{}:{}: more than {} pairs", path.string(), number, kMaxPairs)};
    times_s.push_back(*us * kSecondsPerUs);
  }
  if (times_s.size() < 2) return Error{path.string() + ": fewer than two pairs' times"};
  return network::LinkSpread{name, network::pair_factors_from_times(std::move(times_s))};
}

Expected<network::FabricFit> Presets::fabric_fit(const std::string& name) const {
  const auto path = dir_ / "fabric" / (name + ".toml");
  if (name.empty() || name.find('/') != std::string::npos) {
    return Error{"no fabric fit named \"" + name + "\" (have:" + files_in(dir_ / "fabric", ".toml", true) + ")"};
  }
  auto type = file_type_at(path);
  if (!type) return type.error();
  if (*type == std::filesystem::file_type::not_found) {
    return Error{path.string() + ": no fabric fit named \"" + name + "\" (have:" + files_in(dir_ / "fabric", ".toml", true) + ")"};
  }
  auto file = parse_toml_file(path);
  if (!file) return file.error();
  TableReader top(*file, "");
  network::FabricFit fit;
  fit.name = top.required_string("name");
  fit.node_type = top.required_string("node_type");
  fit.link = top.required_string("link");
  top.string("description", "");
  top.table("provenance");
  const toml::table* parameters = top.table("parameters");
  if (parameters == nullptr && !top.failed()) top.fail("parameters", "missing table [parameters]");
  if (Status s = top.finish(); !s) return s.error();
  if (fit.name != name) return Error{path.string() + ": name = \"" + fit.name + "\" is not the file's name"};
  TableReader r(*parameters, "parameters");
  for (const network::FitParameter& p : network::fit_parameters()) {
    fit.*p.field = r.required_number(p.key, p.lower, p.upper) * p.si_per_unit;
  }
  if (Status s = r.finish(); !s) return s.error();
  return fit;
}

Expected<network::TunerPlugin> Presets::tuner_plugin(const std::string& name) const {
  const auto dir = dir_ / "nccl" / "plugins";
  const auto path = dir / (name + ".toml");
  if (name.empty() || name.find('/') != std::string::npos) {
    return Error{"no tuner plugin named \"" + name + "\" (have:" + files_in(dir, ".toml", true) + ")"};
  }
  auto type = file_type_at(path);
  if (!type) return type.error();
  if (*type == std::filesystem::file_type::not_found) {
    return Error{path.string() + ": no tuner plugin named \"" + name + "\" (have:" + files_in(dir, ".toml", true) + ")"};
  }
  auto file = parse_toml_file(path);
  if (!file) return file.error();
  TableReader top(*file, "", nullptr, path.string());
  network::TunerPlugin plugin;
  plugin.name = top.required_string("name");
  plugin.source = top.required_string("source");
  plugin.min_nodes = static_cast<int>(top.required_integer("min_nodes", 1, network::kMaxNodes));
  top.string("description", "");
  const toml::array* regions = top.required_array("region");
  if (Status s = top.finish(); !s) return s.error();
  if (plugin.name != name) return Error{path.string() + ": name = \"" + plugin.name + "\" is not the file's name"};
  for (std::size_t i = 0; i < regions->size(); ++i) {
    const std::string at = "region[" + std::to_string(i) + "]";
    const toml::table* t = (*regions)[i].as_table();
    if (t == nullptr) return Error{path.string() + ": " + at + " must be a table ([[region]])"};
    TableReader r(*t, at, nullptr, path.string());
    network::TunerRegion region;
    const std::string op = r.required_string("collective");
    const std::string algorithm = r.required_string("algorithm");
    const std::string protocol = r.required_string("protocol");
    region.gpus_per_node = static_cast<int>(r.required_integer("gpus_per_node", 1, 1024));
    const toml::array* vertices = r.required_array("vertices");
    if (!r.failed()) {
      const auto c = network::parse_collective_op(op);
      const auto a = network::parse_algorithm(algorithm);
      const auto pr = network::parse_protocol(protocol);
      if (!c) r.fail("collective", "\"" + op + "\" is not a collective");
      if (!a) r.fail("algorithm", "\"" + algorithm + "\" is not an NCCL algorithm");
      if (!pr) r.fail("protocol", "\"" + protocol + "\" is not an NCCL protocol");
      if (c && a && pr) region = {*c, region.gpus_per_node, {*a, *pr}, {}};
    }
    if (!r.failed()) {
      for (const toml::node& v : *vertices) {
        const toml::array* xy = v.as_array();
        const auto x = xy != nullptr && xy->size() == 2 ? (*xy)[0].value<double>() : std::nullopt;
        const auto y = xy != nullptr && xy->size() == 2 ? (*xy)[1].value<double>() : std::nullopt;
        if (!x || !y || !(*x >= 0) || !(*y >= 0) || !std::isfinite(*x) || !std::isfinite(*y)) {
          r.fail("vertices", "each vertex must be [bytes, ranks], both >= 0");
          break;
        }
        region.vertices.emplace_back(*x, *y);
      }
      if (!r.failed() && region.vertices.size() < 3) r.fail("vertices", "a region needs at least 3 vertices");
    }
    if (Status s = r.finish(); !s) return s.error();
    plugin.regions.push_back(std::move(region));
  }
  return plugin;
}

Expected<network::NcclConstants> Presets::nccl(const std::string& release) const {
  const auto path = dir_ / "nccl" / ("nccl-" + release + ".toml");
  if (release.empty() || release.find('/') != std::string::npos) {
    return Error{"not a release (have:" + files_in(dir_ / "nccl", ".toml", false) + ")"};
  }
  auto type = file_type_at(path);
  if (!type) return type.error();
  if (*type == std::filesystem::file_type::not_found) {
    return Error{path.string() + ": no constants for NCCL release \"" + release + "\" (have:" +
                 files_in(dir_ / "nccl", ".toml", false) + ")"};
  }
  auto file = parse_toml_file(path);
  if (!file) return file.error();
  network::NcclConstants c;
  TableReader top(*file, "");
  c.release = top.required_string("release");
  const toml::table empty;
  auto sub = [&](const std::string& key) -> const toml::table& {
    const toml::table* t = top.table(key);
    if (t == nullptr && !top.failed()) top.fail(key, "missing table [" + key + "]");
    return t != nullptr ? *t : empty;
  };
  auto us3 = [&](TableReader& r, const std::string& key) {
    auto v = r.numbers(key, 3, 0, 1e6);
    return std::array<double, 3>{v[0] * kSecondsPerUs, v[1] * kSecondsPerUs, v[2] * kSecondsPerUs};
  };
  auto gbps3 = [&](TableReader& r, const std::string& key) {
    auto v = r.numbers(key, 3, 0, 1e6);
    return std::array<double, 3>{v[0] * kBytesPerGB, v[1] * kBytesPerGB, v[2] * kBytesPerGB};
  };
  const char* hops[] = {"nvlink", "pci", "net"};
  {
    TableReader r(sub("base_latency_us"), "base_latency_us");
    for (network::Algorithm a : network::kAllAlgorithms) {
      if (network::constants_key(a) != nullptr) c.base_latency_s[int(a)] = us3(r, network::constants_key(a));
    }
    if (Status s = r.finish(); !s) return s.error();
  }
  {
    TableReader r(sub("hop_latency_us"), "hop_latency_us");
    for (network::Algorithm a : network::kAllAlgorithms) {
      if (network::constants_key(a) == nullptr) continue;
      for (int h = 0; h < network::kHopClasses; ++h) {
        c.hop_latency_s[int(a)][h] = us3(r, std::string(network::constants_key(a)) + "_" + hops[h]);
      }
    }
    if (Status s = r.finish(); !s) return s.error();
  }
  {
    TableReader r(sub("net_overhead"), "net_overhead");
    c.net_overhead_intel_s = r.required_number("intel_us", 0, 1e3) * kSecondsPerUs;
    c.net_overhead_amd_s = r.required_number("amd_us", 0, 1e3) * kSecondsPerUs;
    c.simple_net_overhead_factor = r.required_number("simple_factor", 0, 100);
    c.ring_simple_allreduce_latency_factor = r.required_number("ring_simple_allreduce_latency_factor", 0, 100);
    c.ring_simple_allreduce_latency_factor_pre_sm80 =
        r.required_number("ring_simple_allreduce_latency_factor_pre_sm80", 0, 100);
    if (Status s = r.finish(); !s) return s.error();
  }
  {
    TableReader r(sub("protocol"), "protocol");
    auto eff = r.numbers("data_efficiency", 3, 0.01, 1.0);
    auto step = r.numbers("step_bytes", 3, 1, 1e12);
    auto message = r.numbers("message_bytes", 3, 1, 1e12);
    for (int p = 0; p < 3; ++p) {
      c.data_efficiency[p] = eff[p];
      c.step_bytes[p] = step[p];
      c.message_bytes[p] = message[p];
    }
    c.tree_ll_divisor = r.required_number("tree_ll_divisor", 1, 100);
    if (Status s = r.finish(); !s) return s.error();
  }
  {
    TableReader caps(sub("caps"), "caps");
    for (auto [name, arch] : {std::pair{"ampere", &c.ampere}, std::pair{"hopper", &c.hopper}}) {
      const toml::table* t = caps.table(name);
      if (t == nullptr) {
        caps.fail(name, "missing table [caps." + std::string(name) + "]");
        break;
      }
      TableReader r(*t, std::string("caps.") + name);
      arch->tree_simple_bytes_per_s = gbps3(r, "tree_simple_GBps");
      arch->tree_ll128_bytes_per_s = gbps3(r, "tree_ll128_GBps");
      arch->ring_ll128_bytes_per_s = r.required_number("ring_ll128_GBps", 0, 1e6) * kBytesPerGB;
      arch->ll_max_bytes_per_s = r.required_number("ll_max_GBps", 0, 1e6) * kBytesPerGB;
      if (Status s = r.finish(); !s) return s.error();
    }
    if (Status s = caps.finish(); !s) return s.error();
  }
  {
    TableReader r(sub("nvls"), "nvls");
    c.nvls_efficiency = r.required_number("efficiency", 0.01, 1);
    if (Status s = r.finish(); !s) return s.error();
  }
  {
    TableReader r(sub("search"), "search");
    for (auto [key, speeds] : {std::pair{"intra_ampere_GBps", &c.intra_search_ampere_bytes_per_s},
                               std::pair{"intra_hopper_GBps", &c.intra_search_hopper_bytes_per_s},
                               std::pair{"intra_blackwell_GBps", &c.intra_search_blackwell_bytes_per_s}}) {
      const toml::array* list = r.required_array(key);
      if (list == nullptr) break;
      for (const toml::node& v : *list) {
        const auto gbps = v.value<double>();
        if (!gbps || !(*gbps > 0) || (!speeds->empty() && *gbps >= speeds->back() / kBytesPerGB)) {
          r.fail(key, "must list positive GB/s values, fastest first");
          break;
        }
        speeds->push_back(*gbps * kBytesPerGB);
      }
    }
    c.ring_max_channels = static_cast<int>(r.required_integer("ring_max_channels", 1, 1024));
    c.nvls_max_channels = static_cast<int>(r.required_integer("nvls_max_channels", 1, 1024));
    if (Status s = r.finish(); !s) return s.error();
  }
  {
    TableReader r(sub("pat"), "pat");
    c.pat_rank_latency_s = r.required_number("rank_latency_us", 0, 1e3) * kSecondsPerUs;
    c.pat_bw_factor = r.required_number("bw_factor", 0.01, 1);
    if (Status s = r.finish(); !s) return s.error();
  }
  {
    TableReader r(sub("rules"), "rules");
    network::NcclConstants::Rules& rules = c.rules;
    rules.pat = r.boolean("pat", rules.pat);
    rules.one_per_node_tree_net_latency = r.choice("one_per_node_net_latency", "tree", {"tree", "ring"}) == "tree";
    rules.ring_allreduce_net_steps_per_gap =
        r.choice("ring_allreduce_net_steps", "2(nodes-1)", {"2(nodes-1)", "2nodes"}) == "2(nodes-1)";
    const auto ll = r.numbers("ring_ll_bus_factor", 2, 0.01, 1);
    rules.ring_ll_bus_factor = ll[0];
    rules.ring_ll_bus_factor_one_node_gather = ll[1];
    const auto ll128 = r.numbers("ring_ll128_bus_factor", 2, 0.01, 1);
    rules.ring_ll128_bus_factor = ll128[0];
    rules.ring_ll128_bus_factor_one_per_node = ll128[1];
    rules.nvls_bw_min_intra_inter = r.choice("nvls_bandwidth", "in-switch", {"in-switch", "min-intra-inter"}) ==
                                    "min-intra-inter";
    if (Status s = r.finish(); !s) return s.error();
  }
  {
    TableReader r(sub("p2p"), "p2p");
    network::NcclConstants::P2p& p2p = c.p2p;
    p2p.channels_by_nic_bw =
        r.choice("net_peer_channels", "nic-bandwidth", {"nic-bandwidth", "rank-scaled"}) == "nic-bandwidth";
    p2p.per_channel_net_bytes_per_s = r.required_number("per_channel_net_GBps", 0.1, 1e4) * kBytesPerGB;
    p2p.net_chunk_bytes = r.required_number("net_chunk_bytes", 1024, 64.0 * 1024 * 1024);
    p2p.nvl_chunk_bytes = r.required_number("nvl_chunk_bytes", 1024, 64.0 * 1024 * 1024);
    if (Status s = r.finish(); !s) return s.error();
  }
  if (Status s = top.finish(); !s) return s.error();
  return c;
}

}  // namespace commbound::sim
