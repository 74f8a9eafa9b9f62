// A network connection's FIFO window: how many messages NCCL keeps in flight on it, and how long a
// slot takes to come back.
//
// NCCL keeps NCCL_STEPS = 8 slots per connection (src/include/device.h). On a network hop a slot
// comes back only after a round trip: the data's way to the receiver, whose GPU consumes it, whose
// proxy then reposts the buffer and RDMA-writes the clear-to-send that the sender's proxy waits for
// (src/transport/net.cc recvProxyProgress; net_ib ncclIbPostFifo, ncclIbIsend): twice the fit's
// network hop, plus the message's time on the wire at the connection's share of its NIC and the
// receiver's per-message cost. So message k of a connection leaves no earlier than a slot cycle
// after message k - W: the connection needs at least its messages / W slot cycles, however fast the
// links. The bound overlaps the latency chain and the bytes (a message waiting for a slot is not
// waiting for its data) and binds where a connection's messages are small against the round trip.
//
// Users: a ring's network hops (ring.cpp; a Simple slice takes 2 slots, so 4 are in flight) and a
// point-to-point send to a network peer (send_recv.cpp; one slot a chunk of NCCL_P2P_NET_CHUNKSIZE,
// so 8 in flight on each of the send's channels, which also move no faster than NCCL's
// NCCL_P2P_PER_CHANNEL_NET_BW each).
#pragma once

#include "network/fabric_fit.hpp"

namespace commbound::network::internal {

inline constexpr double kNcclSteps = 8;  // NCCL_STEPS (src/include/device.h)

struct Window {
  double in_flight = 0;  // messages
  double message_bytes = 0;
  double messages = 0;   // per connection, the whole call
  double cycle_s = 0;    // a slot's round trip + the message's wire time
  double bound_s() const { return messages / in_flight * cycle_s; }
};

// A slot's round trip on a network connection of `fit`: two network hops, `wire_bytes` at
// `share_bytes_per_s` (the connection's share of its NIC), and the fit's per-message cost.
inline double slot_round_trip_s(const FabricFit& fit, double wire_bytes, double share_bytes_per_s) {
  return 2 * fit.net_hop_s + wire_bytes / share_bytes_per_s + fit.message_s;
}

}  // namespace commbound::network::internal
