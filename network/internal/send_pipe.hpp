// SendPipe and the receive/latency helpers of the step-fidelity actors (ring.cpp, tree.cpp).
//
// At step fidelity every ring step or tree chunk is a SimGrid message between mailboxes; only its
// size matters (the payload pointer is the same dummy for all). NCCL's per-hop protocol latency
// (hwLat) is paid per message, before its send, by sleeping; the physical switch latency is paid
// by SimGrid on the route.
#pragma once

#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Mailbox.hpp>

namespace commbound::network::internal {

// Receives the next message of `in` and returns the simulated time its data arrived (it may have
// arrived earlier, on an eager mailbox, while this actor was busy). Blocks the calling actor.
double receive(simgrid::s4u::Mailbox* in);

// Sleeps until `ready_s` + `latency_s` (no sleep when that time has passed): a message's protocol
// latency is paid per message, not per actor, so latencies of consecutive steps overlap
// (pipelined), as in NCCL's cost model.
void wait_latency(double ready_s, double latency_s);

// The sends of one edge, one after another: a message starts once the previous one on the same
// edge has been delivered (the link serialises them; latencies still overlap, see wait_latency).
class SendPipe {
public:
  // Waits for the previous message, then starts one of `bytes` (rounded) to `to`, at most at
  // `rate_cap_bytes_per_s` (<= 0: uncapped).
  void send(simgrid::s4u::Mailbox* to, double bytes, double rate_cap_bytes_per_s);
  // Waits until the last message has been delivered.
  void drain();

private:
  simgrid::s4u::CommPtr last_;
};

}  // namespace commbound::network::internal
