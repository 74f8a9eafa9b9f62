// The hardware a collective runs on: link technologies, the node type and the fabric.
// Plain values in SI units (bytes, seconds, bytes per second); the TOML loader in sim/ fills them
// from the presets under calibration/, each of which names its source.
#pragma once

#include "core/ceil_div.hpp"
#include "network/fabric_fit.hpp"
#include "network/link_spread.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>
#include <string>
#include <string_view>

namespace commbound::network {

// The network transport NCCL runs over a fabric link, as NCCL_NET names it: its own IB verbs
// transport (InfiniBand and RoCE), or the aws-ofi-nccl plugin over libfabric (AWS EFA). Their
// per-message costs differ, so a fabric fit and a measurement belong to one of them.
enum class NcclNet { ib, libfabric };

// One link technology (NVLink 4, PCIe Gen5 x16, IB NDR, ...), per direction.
struct LinkTech {
  std::string name;
  double bw_bytes_per_s = 0;  // signalling rate per direction
  double latency_s = 0;       // one traversal of the link (NIC or port latency included)
  double efficiency = 1;      // achievable payload fraction of bw_bytes_per_s (headers, flow control)
  NcclNet nccl_net = NcclNet::ib;  // fabric links: the transport NCCL runs over it

  double effective_bw_bytes_per_s() const { return bw_bytes_per_s * efficiency; }
};

enum class HostCpu { intel, amd, other };

// How a node's GPUs reach each other over NVLink.
//   nvswitch: every GPU's NVLink goes to the NVSwitch (DGX/HGX 8-GPU): one link per GPU at `nvlink`.
//   mesh: no switch; every pair of GPUs is wired directly (HGX H100 4-GPU) with an even share of
//         each GPU's NVLink links, so one link per pair at nvlink / (gpus - 1) per direction.
enum class NvlinkTopology { nvswitch, mesh };

// The largest node a full NVLink mesh is modelled for: NCCL's rings over a mesh are every directed
// Hamiltonian cycle of its GPUs, (gpus - 1)! of them (network/internal/ring.cpp), 6 for 4 GPUs.
inline constexpr int kMaxMeshGpus = 4;

// A DGX-like node: GPUs on one NVSwitch (or a direct NVLink mesh), each GPU with a PCIe path to a NIC.
struct NodeType {
  std::string name;
  std::string gpu;            // GPU preset name, e.g. "h100-sxm5"
  int gpus = 8;
  int nics = 8;               // NICs on the compute fabric; NIC k serves rail k
  LinkTech nvlink;            // per GPU, all its NVLink links together, per direction
  NvlinkTopology nvlink_topology = NvlinkTopology::nvswitch;
  LinkTech pcie;              // GPU <-> NIC
  int sm_arch = 90;           // 80 Ampere, 90 Hopper: selects NCCL's per-arch constants
  bool nvls = false;          // NVSwitch with in-switch reduction (NVLink SHARP)
  int nccl_channels = 16;     // channels NCCL runs per collective on this node type
  HostCpu host_cpu = HostCpu::intel;  // selects NCCL's netOverhead (1 us Intel, 2 us AMD)
  std::string nic;            // the NICs' link technology as shipped (the fabric's default link)

  // The effective rate per direction of one GPU-to-GPU link of a mesh (the GPU's NVLink split
  // evenly over its gpus - 1 peers), or of a GPU's link to the NVSwitch.
  double nvlink_link_bw_bytes_per_s() const {
    const double peers = nvlink_topology == NvlinkTopology::mesh && gpus > 1 ? gpus - 1 : 1;
    return nvlink.effective_bw_bytes_per_s() / peers;
  }
  // Why this node cannot be built as described (empty when it can): a mesh holds at most
  // kMaxMeshGpus GPUs and has no switch to reduce in (NVLink SHARP).
  std::string nvlink_topology_problem() const;
  // The NICs a communicator with `gpus_in_comm` of this node's GPUs sends through: its GPUs' own
  // (nics / gpus each, rounded up, at least one). A GPU reaches another GPU's NIC only by PXN,
  // which relays through a GPU of the same communicator, so one GPU per node uses one NIC.
  int nics_reached(int gpus_in_comm) const {
    if (gpus <= 0) return nics;
    return std::max(1, std::min(nics, ceil_div(std::max(1, gpus_in_comm) * nics, gpus)));
  }
};

enum class Topology { single_switch, fat_tree, rail_optimized };
enum class Routing { ecmp, adaptive };

// The scale-out fabric between the nodes' NICs.
struct FabricSpec {
  Topology topology = Topology::fat_tree;
  LinkTech link;                  // NIC and switch-port technology (IB NDR, RoCE 400G, ...)
  Routing routing = Routing::adaptive;
  double oversubscription = 1.0;  // leaf down-ports / up-ports, >= 1
  int switch_radix = 64;          // ports per switch
  int levels = 0;                 // tree levels (2 or 3); 0 = the fewest that fit
  double switch_latency_s = 0;    // one switch traversal
  unsigned ecmp_seed = 0;         // salt of the ECMP flow hash
  // In-network reduction in the fabric's switches (InfiniBand SHARP, NVIDIA Quantum-2 SHARPv3):
  // what NCCL's CollNet needs; with NVLink SHARP nodes NCCL then runs NVLS across nodes.
  bool sharp = false;
  std::optional<FabricFit> fit;   // NCCL as implemented on this fabric; empty: NCCL's tuner latencies
  // Unequal nodes' NICs as a real fabric's pairwise sweep measured them (link_spread.hpp); empty:
  // every NIC at the same rate. Each node's draw is fixed by link_spread_seed and its index.
  std::optional<LinkSpread> spread;
  unsigned link_spread_seed = 0;

  // One NIC's payload rate: the fit's measured efficiency when there is one, else the link's.
  double nic_bw_bytes_per_s() const {
    return fit ? link.bw_bytes_per_s * fit->nic_efficiency : link.effective_bw_bytes_per_s();
  }
  // NICs that keep only a fraction of their rate (a degraded link, a port trained down): (node,
  // NIC) -> that fraction, in (0, 1]. Empty: none.
  std::map<std::pair<int, int>, double> degraded_nics;

  // NIC `nic` of node `node`: nic_bw_bytes_per_s(), x the node's draw of the spread if any, x its
  // degraded fraction if any.
  double nic_bw_bytes_per_s(int node, int nic) const {
    const auto degraded = degraded_nics.find({node, nic});
    return nic_bw_bytes_per_s() * (spread ? spread->nic_factor(node, link_spread_seed) : 1.0) *
           (degraded != degraded_nics.end() ? degraded->second : 1.0);
  }
};

// The most nodes a cluster has (cluster.nodes, --nodes): 2^20, far beyond any cluster built, and small
// enough that every rank count (at most 1024 GPUs per node) fits an int.
inline constexpr int kMaxNodes = 1 << 20;

struct ClusterSpec {
  NodeType node;
  int nodes = 1;
  FabricSpec fabric;

  int gpus() const { return node.gpus * nodes; }
};

// Each enum's names as scenario and preset files spell them: the one map, read and written.
const char* to_string(Topology t);  // "single-switch", "fat-tree", "rail-optimized"
const char* to_string(Routing r);   // "ecmp", "adaptive"
const char* to_string(HostCpu c);   // "intel", "amd", "other"
const char* to_string(NvlinkTopology t);  // "switch", "mesh"
const char* to_string(NcclNet n);   // "IB", "Libfabric" (NCCL_NET's names)
std::optional<Topology> parse_topology(std::string_view name);
std::optional<Routing> parse_routing(std::string_view name);
std::optional<HostCpu> parse_host_cpu(std::string_view name);
std::optional<NvlinkTopology> parse_nvlink_topology(std::string_view name);
std::optional<NcclNet> parse_nccl_net(std::string_view name);

}  // namespace commbound::network
