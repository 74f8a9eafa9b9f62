#include "network/internal/send_pipe.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>

#include <cmath>
#include <cstdint>
#include <utility>

namespace sg4 = simgrid::s4u;

namespace commbound::network::internal {
namespace {

// The payload pointer of every simulated message: receivers never read it, only sizes matter.
int* message_payload() {
  static int payload = 0;
  return &payload;
}

}  // namespace

double receive(sg4::Mailbox* in) {
  int* payload = nullptr;
  sg4::CommPtr c = in->get_async<int>(&payload);
  c->wait();
  return c->get_finish_time();
}

void wait_latency(double ready_s, double latency_s) {
  const double at = ready_s + latency_s;
  if (at > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(at);
}

void SendPipe::send(sg4::Mailbox* to, double bytes, double rate_cap_bytes_per_s) {
  if (last_) last_->wait();
  sg4::CommPtr c = to->put_init(message_payload(), static_cast<uint64_t>(std::llround(bytes)));
  if (rate_cap_bytes_per_s > 0) c->set_rate(rate_cap_bytes_per_s);
  c->start();
  last_ = std::move(c);
}

void SendPipe::drain() {
  if (last_) last_->wait();
  last_ = nullptr;
}

}  // namespace commbound::network::internal
