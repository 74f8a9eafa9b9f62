#include "network/internal/p2p_channels.hpp"

#include "core/ceil_div.hpp"
#include "core/units.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace commbound::network::internal {
namespace {

// sm90SpeedArrayInter[0] (src/graph/search.cc): a NIC at least this fast holds a search channel at
// it, above the 45 GB/s at which connect.cc doubles Hopper's ring channels across nodes.
constexpr double kHopperFirstInterSpeedBytesPerS = 48e9;
constexpr int kHopperDoubleBelowChannels = 16;  // connect.cc: "nChannels < 16"
constexpr int kMaxChannels = 64;                // MAXCHANNELS (src/include/device.h)
constexpr int kP2pPerBatch = 8;                 // NCCL_MAX_DEV_WORK_P2P_PER_BATCH (src/include/device.h)
// One NVLink's bandwidth as NCCL's topology counts it (src/graph/topo.h SM80/SM90/SM100_NVLINK_BW).
double nvlink_link_bytes_per_s(int sm_arch) { return (sm_arch >= 100 ? 40.1 : sm_arch >= 90 ? 20.6 : 20.0) * kBytesPerGB; }

int pow2_up(int v) { return static_cast<int>(std::bit_ceil(static_cast<unsigned>(std::max(1, v)))); }
// A count worked out in double (a ratio of bandwidths), truncated as NCCL's integer GB/s do, held
// within [1, kMaxChannels] before it becomes an int: a test's or a user's near-infinite link must
// not overflow the cast.
int whole_count(double v) { return static_cast<int>(std::clamp(std::floor(v), 1.0, double{kMaxChannels})); }

int ring_channels(const NodeType& node, double nic_bytes_per_s, int one_node_ring_channels, P2pComm comm) {
  if (comm.one_node()) return std::min(kMaxChannels, 2 * std::max(1, one_node_ring_channels));
  int ch = std::max(1, node.nccl_channels * node.nics_reached(comm.gpus_per_node) / std::max(1, node.nics));
  if (node.sm_arch >= 90 && ch < kHopperDoubleBelowChannels && nic_bytes_per_s >= kHopperFirstInterSpeedBytesPerS) {
    ch *= 2;
  }
  return std::min(ch, kMaxChannels);
}

}  // namespace

P2pSend p2p_send(const NcclConstants& nccl, const NodeType& node, double nic_bytes_per_s, int one_node_ring_channels,
                 P2pComm comm, double bytes) {
  P2pSend s;
  s.ring_channels = ring_channels(node, nic_bytes_per_s, one_node_ring_channels, comm);
  s.p2p_channels = pow2_up(s.ring_channels);

  // The fewest channels of any peer: inside one node an NVLink peer's, else a network peer's.
  if (comm.one_node()) {
    const int links = whole_count(node.nvlink_link_bw_bytes_per_s() / nvlink_link_bytes_per_s(node.sm_arch));
    s.peer_channels = std::min(s.p2p_channels, pow2_up(2 * links));
  } else {
    const int gpu_nics = std::max(1, node.nics / std::max(1, node.gpus));
    if (nccl.p2p.channels_by_nic_bw) {
      // NCCL's topology counts GB/s and truncates both to whole ones before dividing.
      const double net_gbps = std::floor(gpu_nics * nic_bytes_per_s / kBytesPerGB);
      const double per_channel_gbps = std::max(1.0, std::floor(nccl.p2p.per_channel_net_bytes_per_s / kBytesPerGB));
      s.peer_channels = pow2_up(std::max(gpu_nics, whole_count(std::ceil(net_gbps / per_channel_gbps))));
      const int rounds = ceil_div(comm.ranks, kP2pPerBatch);
      while (s.peer_channels * rounds > s.p2p_channels && s.peer_channels > 1) s.peer_channels /= 2;
    } else {
      int scaled = 2;
      while (scaled * comm.ranks > s.ring_channels * 4 && scaled > 1) scaled /= 2;
      s.peer_channels = pow2_up(std::min(s.ring_channels, std::max(gpu_nics, scaled)));
    }
  }

  // The send's channels: start where every rank's sends fit the p2p channels once, double while a
  // channel's part is more than the largest part.
  const double chunk = comm.one_node() ? nccl.p2p.nvl_chunk_bytes : nccl.p2p.net_chunk_bytes;
  const double min_part = comm.one_node() ? chunk / 8 : chunk / 2;
  const double max_part = comm.one_node() ? chunk * 32 : chunk;
  int start = s.peer_channels;
  while (start * comm.ranks > s.p2p_channels && start > 1) start /= 2;
  s.send_channels = static_cast<int>(std::clamp<double>(std::ceil(bytes / min_part), 1, start));
  double part = std::max(min_part, std::ceil(bytes / s.send_channels));
  while (part > max_part && s.send_channels <= s.peer_channels / 2) {
    s.send_channels *= 2;
    part = std::ceil(bytes / s.send_channels);
  }
  s.chunk_bytes = comm.one_node() ? chunk : (bytes < chunk ? chunk / 4 : (bytes < 8 * chunk ? chunk / 2 : chunk));
  return s;
}

}  // namespace commbound::network::internal
