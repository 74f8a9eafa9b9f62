// NcclConstants: the numbers of NCCL's own cost model (src/graph/tuning.cc) for one release.
// Loaded from calibration/nccl/nccl-<release>.toml, which cites the source of every value.
// All SI: seconds, bytes per second, bytes.
#pragma once

#include "network/collective.hpp"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace commbound::network {

struct TunerPlugin;  // tuner_plugin.hpp

enum class HopClass { nvlink, pci, net };
inline constexpr int kHopClasses = 3;

struct NcclConstants {
  std::string release;

  // baseLat[algorithm][protocol]: once per collective.
  std::array<std::array<double, kProtocols>, kAlgorithms> base_latency_s{};
  // hwLat[algorithm][hop class][protocol]: per hop on the critical path.
  std::array<std::array<std::array<double, kProtocols>, kHopClasses>, kAlgorithms> hop_latency_s{};
  // netOverhead, the proxy's per-step cost on multi-node runs; x simple_net_overhead_factor for Simple.
  double net_overhead_intel_s = 1e-6;
  double net_overhead_amd_s = 2e-6;
  double simple_net_overhead_factor = 3;
  // Multi-node Ring/Simple AllReduce latency multiplier (sm80 and newer / older).
  double ring_simple_allreduce_latency_factor = 1.4;
  double ring_simple_allreduce_latency_factor_pre_sm80 = 1.9;

  // Payload per byte on the wire: LL 8 of 16 bytes, LL128 120 of 128, Simple 1.
  std::array<double, kProtocols> data_efficiency{0.5, 120.0 / 128.0, 1.0};

  // Per-channel bandwidth caps (payload), for Ampere (sm80) and Hopper (sm90), by node count
  // regime [1 node, 2 nodes, >2 nodes].
  struct ArchCaps {
    std::array<double, 3> tree_simple_bytes_per_s{};   // perChMaxTreeBw
    std::array<double, 3> tree_ll128_bytes_per_s{};    // perChMaxTreeLL128Bw
    double ring_ll128_bytes_per_s = 0;                 // per-channel LL128 ring cap
    double ll_max_bytes_per_s = 0;                     // llMaxBw, whole collective, single node
  };
  ArchCaps ampere;
  ArchCaps hopper;
  double tree_ll_divisor = 3.8;     // Tree LL busBw / 3.8
  double nvls_efficiency = 0.85;    // Hopper NVLS in-switch reduction efficiency
  double pat_rank_latency_s = 2.8e-6;  // PAT's linear latency term, per rank
  double pat_bw_factor = 0.75;         // PAT busBw x 0.75

  // Where one release's tuner differs in form, not only in its numbers (tuning.cc of that tag); the
  // defaults are 2.30.7's.
  struct Rules {
    bool pat = true;  // the release has PAT (from 2.23)
    // With one GPU per node, a ring's network hops are priced at Tree's latency (2.30.7), or at
    // Ring's as for any ring (2.20.5).
    bool one_per_node_tree_net_latency = true;
    // A multi-node ring AllReduce's network steps: 2 (nodes - 1) (2.30.7) or 2 nodes (2.20.5).
    bool ring_allreduce_net_steps_per_gap = true;
    // Ring LL busBw factor: [multi-node, AllReduce or one-node AllGather/ReduceScatter ...]: 2.30.7
    // 0.5 always; 2.20.5 1/4 across nodes or for an AllReduce, 1/3 for one node's AllGather and
    // ReduceScatter.
    double ring_ll_bus_factor = 0.5;
    double ring_ll_bus_factor_one_node_gather = 0.5;
    // Ring LL128 busBw factor with 2+ GPUs per node and with one (2.20.5: 0.7 when ppn < 2).
    double ring_ll128_bus_factor = 0.92;
    double ring_ll128_bus_factor_one_per_node = 0.92;
    // NVLS and NVLSTree busBw as 2.20.5 prices them: nChannels x min(bwIntra, bwInter) (NVLSTree:
    // bwInter / 2 beyond 2 nodes) x 5/6, instead of 2.28's in-switch efficiency formula.
    bool nvls_bw_min_intra_inter = false;
  };
  Rules rules;

  // Point-to-point sends to a network peer (ncclSend/ncclRecv): how many channels NCCL stripes one
  // over and what one FIFO slot holds (internal/p2p_channels.hpp).
  struct P2p {
    // How a network peer's channels are counted (src/graph/paths.cc ncclTopoGetNchannels): 2.29 and
    // later max(NICs, ceil(the GPU's NIC GB/s / per_channel_net)), after which every peer's are
    // halved until ceil(ranks / 8) rounds of peers fit the p2p channels (ncclTopoComputeP2pChannels);
    // 2.20.5 two, halved while 2 x ranks > 4 x p2p channels, at least the GPU's NICs.
    bool channels_by_nic_bw = true;
    // NCCL_P2P_PER_CHANNEL_NET_BW: sizes a peer's channels (by-NIC-bandwidth only) and is the most one
    // network channel of a send moves (internal/send_recv.cpp).
    double per_channel_net_bytes_per_s = 14e9;
    double net_chunk_bytes = 131072;            // NCCL_P2P_NET_CHUNKSIZE: one slot of a network send
    double nvl_chunk_bytes = 524288;            // NCCL_P2P_NVL_CHUNKSIZE: one slot inside an NVLink node
  };
  P2p p2p;

  // A tuner plugin NCCL asks before its own tuner (`[nccl] tuner_plugin`); null: none.
  std::shared_ptr<const TunerPlugin> tuner_plugin;

  // NCCL's topology search inside one node (src/graph/search.cc): the per-channel bandwidths it
  // tries, fastest first, for sm80 and older, sm90 and sm100 (bytes per second), and the most
  // channels a ring graph and an NVLS graph may hold.
  std::vector<double> intra_search_ampere_bytes_per_s;
  std::vector<double> intra_search_hopper_bytes_per_s;
  std::vector<double> intra_search_blackwell_bytes_per_s;
  int ring_max_channels = 32;
  int nvls_max_channels = 32;

  // Pipelining: bytes of one step of a channel's buffer (buffer size / NCCL_STEPS) per protocol.
  std::array<double, kProtocols> step_bytes{};
  // Payload of one network send (one proxy isend): Simple a slice of sliceSteps = 2 steps of 512 KiB;
  // LL and LL128 one step, of which LL carries half and LL128 120/128 as payload.
  std::array<double, kProtocols> message_bytes{};

  const ArchCaps& caps(int sm_arch) const { return sm_arch >= 90 ? hopper : ampere; }
  const std::vector<double>& intra_search_speeds(int sm_arch) const {
    return sm_arch >= 100 ? intra_search_blackwell_bytes_per_s
                          : (sm_arch >= 90 ? intra_search_hopper_bytes_per_s : intra_search_ampere_bytes_per_s);
  }
  double base(Algorithm a, Protocol p) const { return base_latency_s[int(a)][int(p)]; }
  double hop(Algorithm a, HopClass h, Protocol p) const { return hop_latency_s[int(a)][int(h)][int(p)]; }
};

}  // namespace commbound::network
