// Presets: the named hardware and NCCL data under calibration/ (links.toml, nodes.toml,
// nccl/nccl-<release>.toml), read into the network's SI structs. Errors name the preset file,
// line, key and value.
#pragma once

#include "core/expected.hpp"
#include "core/key_table.hpp"
#include "core/table_reader.hpp"
#include "network/cluster_spec.hpp"
#include "network/nccl_constants.hpp"
#include "network/tuner_plugin.hpp"

#include <toml++/toml.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace commbound::sim {

// Where the shipped data lives: <dir of the executable>/../share/commbound (the build tree and an
// install share this layout), holding calibration/ and scenarios/. Found from the executable, not
// the working directory, so that commbound runs from anywhere.
std::filesystem::path default_data_dir();
// default_data_dir() / "calibration".
std::filesystem::path default_calibration_dir();

class Presets {
public:
  explicit Presets(std::filesystem::path calibration_dir) : dir_(std::move(calibration_dir)) {}
  const std::filesystem::path& dir() const { return dir_; }

  Expected<network::LinkTech> link(const std::string& name) const;
  Expected<network::NodeType> node(const std::string& name) const;
  Expected<network::NcclConstants> nccl(const std::string& release) const;
  // calibration/fabric/<name>.toml, written by commbound fit-fabric: its [parameters] in SI units,
  // each checked against its bounds (fabric_fit.hpp). [provenance] is for people and not read.
  Expected<network::FabricFit> fabric_fit(const std::string& name) const;
  // calibration/nccl/plugins/<name>.toml: a tuner plugin's regions (network/tuner_plugin.hpp).
  Expected<network::TunerPlugin> tuner_plugin(const std::string& name) const;
  // calibration/fabric/spread/<name>.txt: one transfer's time (us) per node pair, `#` comments.
  Expected<network::LinkSpread> link_spread(const std::string& name) const;

private:
  std::filesystem::path dir_;
};

// The keys of a link technology table and of a node type table, as data (key_table.hpp): the
// presets and a scenario's [fabric.link] and [cluster.node] are read, written back and documented
// from these.
const std::vector<KeySpec<network::LinkTech>>& link_keys();
const std::vector<KeySpec<network::NodeType>>& node_keys();

// Reads one link technology table (keys as in calibration/links.toml: description, bandwidth_GBps,
// efficiency, latency_us); `prefix` is its dotted path for error messages.
Expected<network::LinkTech> read_link(const toml::table& table, const std::string& name, const std::string& prefix,
                                      const std::map<std::string, std::string>* overrides = nullptr);

// Reads one node type table (keys as in calibration/nodes.toml: gpu, gpus, nics, nvlink,
// nvlink_topology ("switch", the default, or "mesh"), pcie, nic, sm_arch, nvls, nccl_channels,
// host_cpu, description); its nvlink and pcie name links.toml presets.
Expected<network::NodeType> read_node(const toml::table& table, const std::string& name, const std::string& prefix,
                                      const Presets& presets,
                                      const std::map<std::string, std::string>* overrides = nullptr);

}  // namespace commbound::sim
