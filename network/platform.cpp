#include "network/platform.hpp"

#include "network/internal/fabric_zone.hpp"
#include "network/internal/link_occupancy.hpp"

#include <simgrid/Exception.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Mailbox.hpp>
#include <simgrid/s4u/Semaphore.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <iomanip>

namespace sg4 = simgrid::s4u;

namespace commbound::network {
namespace internal {

// A slot's flow poster (Platform::start_segment): an actor on the slot's source host that, each
// time it is woken, posts a receive and a send of `bytes` on its own mailbox (the comm starts at
// once, from its host to itself: routed by FabricZone as the slot's segment), waits for it and
// reports its finish time. A daemon: it does not keep the simulation alive.
//
// Rerouted (Platform::reroute_segment), a flow in flight is cancelled and posted again with what it
// has left; one rerouted while it was being posted (the route is read when SimGrid starts the comm,
// and other actors run meanwhile) is posted again as it was. `done` is called once, by the last.
struct SegmentPoster {
  sg4::SemaphorePtr wake = sg4::Semaphore::create(0);
  sg4::Mailbox* mailbox = nullptr;
  double bytes = 0;
  std::function<void(double)> done;
  sg4::CommPtr flow;         // the flow in flight, once posted
  unsigned reroutes = 0;     // times rerouted
};

}  // namespace internal
namespace {

// What a segment flow carries: nothing (its size is simulated); SimGrid wants a payload pointer.
int* segment_payload() {
  static int payload = 0;
  return &payload;
}

void serve_segments(internal::SegmentPoster* poster) {
  sg4::Actor::self()->daemonize();
  for (;;) {
    poster->wake->acquire();
    sg4::CommPtr in;
    sg4::CommPtr out;
    for (;;) {
      const unsigned reroutes = poster->reroutes;
      int* payload = nullptr;
      in = poster->mailbox->get_async<int>(&payload);
      // The size as given, not rounded to whole bytes: a resumed segment has a fraction left.
      out = poster->mailbox->put_init(segment_payload(), 0);
      out->set_remaining(poster->bytes);
      out->start();
      if (poster->reroutes == reroutes) break;
      out->cancel();  // rerouted while starting, so perhaps on the old route: nothing has moved yet
    }
    poster->flow = out;
    try {
      out->wait();
      in->wait();
    } catch (const simgrid::NetworkFailureException&) {
      // SimGrid 3.32 fails the waits of a cancelled comm as a link failure (the fabric has no
      // failures of its own): rerouted, and what it had left is posted again.
      continue;
    }
    poster->flow = nullptr;
    std::function<void(double)> done = std::move(poster->done);
    done(in->get_finish_time());
  }
}

// Segment slots (see internal/fluid_flows.hpp, with worked numbers). The spare pool,
// max(512, 4 x nodes), is what collectives cut their flows from: each takes a quarter of what is
// free. On top of it sits a reserve of one slot per channel group for every other collective that
// may be in flight, so that no collective ever finds fewer free slots than it has groups (it would
// have to wait, delaying its flows for a reason of the model's, not the hardware's).
int spare_segment_slots(const ClusterSpec& spec) { return std::max(512, 4 * spec.nodes); }
// The most channel groups one collective runs as separate flows: NCCL's channels unmerged, two
// trees per channel, or NVLS's flow up and down per GPU of a node.
int max_groups_per_collective(const ClusterSpec& spec) { return 2 * std::max(spec.node.nccl_channels, spec.node.gpus); }

// Actor stacks: our actors are shallow loops; 16k actors x 8 MiB default would reserve 128 GiB.
constexpr const char* kStackSizeKiB = "64";

std::unique_ptr<sg4::Engine> start_engine(MaxMinScope scope) {
  static std::vector<std::string> args = {
      "commbound",
      "--cfg=network/model:CM02",          // pure max-min sharing, no TCP-derived factors
      // No per-flow TCP window cap. Not 0: SimGrid 3.32 then bounds a comm with latency by
      // min(rate, 0) = "unbounded", dropping Comm::set_rate caps; a huge window keeps them.
      "--cfg=network/TCP-gamma:1e30",
      "--cfg=network/crosstraffic:0",      // no reverse-direction ACK load (RDMA, NVLink)
      std::string("--cfg=contexts/stack-size:") + kStackSizeKiB,
      "--cfg=contexts/factory:raw",
      // No guard page below each actor's stack: protecting one splits the stack's mapping, and the
      // kernel's limit on mappings per process (vm.max_map_count, 65530 by default) then stops
      // SimGrid near 32k actors ("Failed to protect stack"), where a 131,072-GPU run needs more.
      // Our actors' frames are shallow (64 KiB stacks, above) and never recurse.
      "--cfg=contexts/guard-size:0",
      // Actions are updated at every event, not lazily through a heap: measured by
      // bench/bench_training, Llama-2 7B FSDP on 16384 GPUs in 9.0 s instead of 13.3 s
      // (bench_collectives' 256-rank step ring: 3.8 s instead of 5.4 s); outputs are byte-identical.
      "--cfg=network/optim:Full",
      // What a change re-solves (MaxMinScope): the whole system, or the flows connected to it.
      std::string("--cfg=network/maxmin-selective-update:") + (scope == MaxMinScope::connected ? "yes" : "no"),
      "--log=root.thresh:warning",
  };
  static std::vector<char*> argv;
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  int argc = static_cast<int>(argv.size());
  return std::make_unique<sg4::Engine>(&argc, argv.data());
}

std::string check_spec(const ClusterSpec& spec) {
  if (spec.nodes < 1) return "nodes must be at least 1";
  if (spec.node.gpus < 1 || spec.node.nics < 1) return "a node needs at least one GPU and one NIC";
  if (spec.node.gpus % spec.node.nics != 0) return "GPUs per node must be a multiple of NICs per node";
  if (std::string why = spec.node.nvlink_topology_problem(); !why.empty()) return why;
  if (spec.fabric.topology != Topology::single_switch && spec.fabric.switch_radix < 4) return "switch radix below 4";
  return "";
}

}  // namespace

Expected<std::unique_ptr<Platform>> Platform::create(const ClusterSpec& spec, int concurrent_collectives,
                                                     MaxMinScope scope) {
  if (std::string why = check_spec(spec); !why.empty()) {
    return Error{"cluster: " + why};
  }
  internal::TreePlan plan = internal::plan_tree(spec);
  if (!plan.error.empty()) {
    return Error{"fabric: " + std::to_string(spec.nodes) + " nodes do not fit: " + plan.error};
  }
  if (concurrent_collectives < 1) return Error{"concurrent collectives must be at least 1"};
  std::unique_ptr<Platform> platform(new Platform(spec, start_engine(scope)));
  platform->reserved_segments_ = max_groups_per_collective(spec) * (concurrent_collectives - 1);
  const int slots = spare_segment_slots(spec) + platform->reserved_segments_;
  platform->zone_ = new internal::FabricZone(spec, plan.geometry, slots);  // SimGrid owns the root zone
  for (int j = slots - 1; j >= 0; --j) platform->free_segments_.push_back(j);
  return platform;
}

Platform::Platform(const ClusterSpec& spec, std::unique_ptr<sg4::Engine> engine)
    : spec_(spec), engine_(std::move(engine)), occupancy_(std::make_unique<internal::LinkOccupancy>()) {}

Platform::~Platform() = default;

sg4::Host* Platform::gpu(int rank) const { return zone_->gpu_host(node_of(rank), local_of(rank)); }

sg4::Host* Platform::nvswitch(int node) const { return zone_->nvswitch_host(node); }

double Platform::route_latency_s(int src_rank, int dst_rank) const {
  return zone_->named_route(gpu(src_rank), gpu(dst_rank)).latency_s;
}

std::vector<std::string> Platform::route_links(int src_rank, int dst_rank) const {
  return zone_->named_route(gpu(src_rank), gpu(dst_rank)).links;
}

double Platform::link_bandwidth_bytes_per_s(int link_info) const {
  return zone_->links()[static_cast<std::size_t>(link_info)].bw_bytes_per_s;
}

int Platform::acquire_segment() {
  if (free_segments_.empty()) return -1;
  const int slot = free_segments_.back();
  free_segments_.pop_back();
  return slot;
}

std::shared_ptr<const internal::SegmentRoute> Platform::segment_route(
    std::span<const std::pair<sg4::Host*, sg4::Host*>> edges) const {
  return zone_->segment_route(edges);
}

void Platform::cap_segment(int slot, double cap_bytes_per_s) {
  constexpr double kUncappedBytesPerS = 1e18;
  zone_->segment_cap_link(slot)->set_bandwidth(cap_bytes_per_s > 0 ? cap_bytes_per_s : kUncappedBytesPerS);
}

double Platform::route_segment(int slot, std::shared_ptr<const internal::SegmentRoute> route,
                               std::optional<double> latency_s) {
  return zone_->set_segment(slot, std::move(route), latency_s);
}

void Platform::release_segment(int slot) {
  free_segments_.push_back(slot);
}

void Platform::check_free_segments(int n) const {
  if (static_cast<int>(free_segments_.size()) < n) {
    throw std::logic_error("segment pool: " + std::to_string(n) + " slots needed, " +
                           std::to_string(free_segments_.size()) + " free: more collectives in flight than the " +
                           "Platform was created for");
  }
}

void Platform::start_segment(int slot, double bytes, std::function<void(double finish_s)> done) {
  if (posters_.empty()) posters_.resize(zone_->segment_slots());
  std::unique_ptr<internal::SegmentPoster>& poster = posters_[static_cast<std::size_t>(slot)];
  const bool fresh = !poster;
  if (fresh) poster = std::make_unique<internal::SegmentPoster>();
  // Set before the first simcall (other actors may reroute it meanwhile).
  poster->bytes = bytes;
  poster->done = std::move(done);
  if (fresh) {
    poster->mailbox = sg4::Mailbox::by_name("segment" + std::to_string(slot));
    sg4::Actor::create("segment", zone_->segment_src(slot), [p = poster.get()] { serve_segments(p); });
  }
  poster->wake->release();
}

bool Platform::reroute_segment(int slot, std::shared_ptr<const internal::SegmentRoute> route, double latency_s) {
  internal::SegmentPoster& poster = *posters_[static_cast<std::size_t>(slot)];
  if (poster.flow && poster.flow->get_remaining() <= 0) return false;  // completing now: its poster reports it
  ++poster.reroutes;
  zone_->set_segment(slot, std::move(route), latency_s);
  if (!poster.flow) return true;  // not posted yet, or being posted: its poster posts it on this route
  sg4::CommPtr flow = std::move(poster.flow);
  poster.bytes = flow->get_remaining();
  flow->cancel();
  poster.wake->release();
  return true;
}

int Platform::fabric_levels() const { return zone_->geometry().levels; }
int Platform::leaf_switches() const { return zone_->geometry().leaves; }
int Platform::leaf_down_ports() const { return zone_->geometry().down_ports; }
int Platform::leaf_up_ports() const { return zone_->geometry().up_ports; }

void Platform::run(std::function<void()> body) {
  sg4::Actor::create("driver", gpu(0), std::move(body));
  engine_->run();
}

Status Platform::export_xml(std::ostream& out, int max_hosts) const {
  std::vector<sg4::Host*> hosts;
  std::vector<int> node;             // node of each host
  std::vector<bool> switch_endpoint;  // NVLS endpoints only talk to their own node's GPUs
  for (int n = 0; n < spec_.nodes; ++n) {
    for (int g = 0; g < spec_.node.gpus; ++g) {
      hosts.push_back(zone_->gpu_host(n, g));
      node.push_back(n);
      switch_endpoint.push_back(false);
    }
    if (sg4::Host* sw = zone_->nvswitch_host(n); sw != nullptr) {
      hosts.push_back(sw);
      node.push_back(n);
      switch_endpoint.push_back(true);
    }
  }
  if (static_cast<int>(hosts.size()) > max_hosts) {
    return Error{"--export: the platform has " + std::to_string(hosts.size()) + " hosts; the XML route table grows " +
                 "as hosts^2 and export is limited to " + std::to_string(max_hosts) + " hosts (use fewer nodes)"};
  }
  out << std::setprecision(17);
  out << "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n";
  out << "<!-- Written by commbound platform --export: " << spec_.nodes << " x " << spec_.node.name << ", "
      << to_string(spec_.fabric.topology) << " " << spec_.fabric.link.name << " (" << to_string(spec_.fabric.routing)
      << "). Bandwidths are effective rates in bytes/s, latencies in s. -->\n";
  out << "<platform version=\"4.1\">\n  <zone id=\"cluster\" routing=\"Full\">\n";
  for (sg4::Host* h : hosts) {
    out << "    <host id=\"" << h->get_name() << "\" speed=\"1Tf\"/>\n";
  }
  for (const auto& l : zone_->links()) {
    if (l.internal) continue;
    out << "    <link id=\"" << l.name << "\" bandwidth=\"" << l.bw_bytes_per_s << "Bps\" latency=\"" << l.latency_s
        << "s\"";
    if (l.split_duplex) out << " sharing_policy=\"SPLITDUPLEX\"";
    if (l.fatpipe) out << " sharing_policy=\"FATPIPE\"";
    out << "/>\n";
  }
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    for (std::size_t j = 0; j < hosts.size(); ++j) {
      if (i == j || ((switch_endpoint[i] || switch_endpoint[j]) && node[i] != node[j])) continue;
      sg4::Host* src = hosts[i];
      sg4::Host* dst = hosts[j];
      auto route = zone_->named_route(src, dst);
      out << "    <route src=\"" << src->get_name() << "\" dst=\"" << dst->get_name() << "\" symmetrical=\"NO\">";
      for (const std::string& link : route.links) {
        const auto colon = link.rfind(':');
        if (colon == std::string::npos) {
          out << "<link_ctn id=\"" << link << "\"/>";
        } else {
          out << "<link_ctn id=\"" << link.substr(0, colon) << "\" direction=\"" << link.substr(colon + 1) << "\"/>";
        }
      }
      out << "</route>\n";
    }
  }
  out << "  </zone>\n</platform>\n";
  return Ok{};
}

}  // namespace commbound::network
