#include "network/internal/send_recv.hpp"

#include "core/size_label.hpp"
#include "core/units.hpp"
#include "network/internal/fifo_window.hpp"
#include "network/internal/fluid_flows.hpp"
#include "network/internal/p2p_channels.hpp"

#include <simgrid/s4u/Actor.hpp>

#include <fmt/format.h>

#include <cmath>
#include <optional>

namespace sg4 = simgrid::s4u;

namespace commbound::network::internal {
namespace {

// The channels NCCL stripes this send over, for the pair's communicator (the pair alone when the
// call names none).
P2pSend plan_send(const AlgorithmParams& params) {
  const Platform& platform = params.platform;
  const CollectiveCall& call = params.call;
  P2pComm comm;
  if (call.comm_ranks > 0) {
    comm = {call.comm_ranks, call.comm_gpus_per_node};
  } else {
    comm.gpus_per_node = params.shape.nodes > 1 ? 1 : 2;
  }
  // The tuner's search inside a node is read only for a communicator on one node.
  const int one_node_ring_channels = comm.one_node() ? params.tuner.ring_graph().channels : 0;
  return p2p_send(params.nccl, platform.spec().node, platform.spec().fabric.link.bw_bytes_per_s,
                  one_node_ring_channels, comm, call.size_bytes);
}

// A network send's FIFO window: 8 slots of a chunk on each of its channels, which share one NIC.
Window net_window(const AlgorithmParams& params, const P2pSend& send) {
  Window w;
  w.in_flight = kNcclSteps;
  w.message_bytes = send.chunk_bytes;
  w.messages = std::ceil(params.call.size_bytes / send.send_channels / send.chunk_bytes);
  const double share_bytes_per_s = params.platform.spec().fabric.nic_bw_bytes_per_s() / send.send_channels;
  w.cycle_s = slot_round_trip_s(*params.fit, send.chunk_bytes / params.efficiency(), share_bytes_per_s);
  return w;
}

}  // namespace

AlgorithmResult run_send_recv(const AlgorithmParams& params) {
  Platform& platform = params.platform;
  const int src = params.call.ranks[0];
  const int dst = params.call.ranks[1];
  const bool net = platform.hop_class(src, dst) == HopClass::net;
  const P2pSend send = plan_send(params);
  // Inside a node each channel's CTA copies at most its share of the GPU's NVLink, the same share
  // the ring's channels get (node.nccl_channels of them fill it): ASSUMED, NCCL states no per-CTA rate.
  // Across nodes a channel moves at most NCCL's own figure for one network p2p channel
  // (NCCL_P2P_PER_CHANNEL_NET_BW, by which 2.29 and later size a peer's channels), in payload bytes.
  const NodeType& node = platform.spec().node;
  const double cap_bytes_per_s =
      net ? send.send_channels * params.nccl.p2p.per_channel_net_bytes_per_s / params.efficiency()
          : send.send_channels * node.nvlink.effective_bw_bytes_per_s() / node.nccl_channels;
  const double sleep_s = params.hop_s(src, dst);
  sg4::this_actor::sleep_for(params.base_s + sleep_s);
  const std::vector<Edge> edge = {{platform.gpu(src), platform.gpu(dst)}};
  const FluidRun run = run_fluid(platform, {{edge, params.call.size_bytes / params.efficiency(), cap_bytes_per_s}});
  AlgorithmResult result;
  result.bandwidth_s = run.bandwidth_s;
  if (net && params.itemize) {
    result.rate_note = fmt::format(", at most {} channel(s) x {:g} GB/s (NCCL's rate of one network p2p channel)",
                                   send.send_channels, params.nccl.p2p.per_channel_net_bytes_per_s / kBytesPerGB);
  }
  result.flows = run.flows;
  result.latency_s = params.base_s + sleep_s + route_latency_s(platform.gpu(src), platform.gpu(dst));
  if (!net || params.fit == nullptr || params.call.size_bytes <= 0) return result;
  const Window window = net_window(params, send);
  if (params.base_s + window.bound_s() > result.latency_s + result.bandwidth_s) {
    result.schedule_s = params.base_s + window.bound_s();
    if (params.itemize) {
      result.schedule_note = fmt::format(
          "waiting for FIFO slots: {} channel(s), {:g} messages of {} each, {:g} in flight, a slot back every "
          "{:.2f} us",
          send.send_channels, window.messages, size_label(window.message_bytes), window.in_flight,
          window.cycle_s * kUsPerS);
    }
  }
  return result;
}

}  // namespace commbound::network::internal
