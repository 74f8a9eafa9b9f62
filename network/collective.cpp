#include "network/collective.hpp"

#include "network/internal/algorithm.hpp"

#include "core/check.hpp"
#include "core/enum_names.hpp"
#include "network/cluster_spec.hpp"

namespace commbound::network {

NcclTestsOp nccl_tests_op(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_gather: return NcclTestsOp::all_gather;
    case CollectiveOp::reduce_scatter: return NcclTestsOp::reduce_scatter;
    case CollectiveOp::all_reduce: return NcclTestsOp::all_reduce;
    case CollectiveOp::send_recv: return NcclTestsOp::send_recv;
    case CollectiveOp::all_to_all: return NcclTestsOp::all_to_all;
  }
  COMMBOUND_CHECK(false, "a CollectiveOp outside its enumerators");
  return NcclTestsOp::all_reduce;
}

CollectiveOp collective_op(NcclTestsOp op) {
  switch (op) {
    case NcclTestsOp::all_gather: return CollectiveOp::all_gather;
    case NcclTestsOp::reduce_scatter: return CollectiveOp::reduce_scatter;
    case NcclTestsOp::all_reduce: return CollectiveOp::all_reduce;
    case NcclTestsOp::send_recv: return CollectiveOp::send_recv;
    case NcclTestsOp::all_to_all: return CollectiveOp::all_to_all;
  }
  COMMBOUND_CHECK(false, "an NcclTestsOp outside its enumerators");
  return CollectiveOp::all_reduce;
}

double bus_bw_factor(CollectiveOp op, int ranks) { return commbound::bus_bw_factor(nccl_tests_op(op), ranks); }

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_gather: return "allgather";
    case CollectiveOp::reduce_scatter: return "reducescatter";
    case CollectiveOp::all_reduce: return "allreduce";
    case CollectiveOp::send_recv: return "sendrecv";
    case CollectiveOp::all_to_all: return "alltoall";
  }
  return "?";
}

const char* to_string(Algorithm a) { return internal::algorithm_spec(a).name; }

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (Algorithm a : kAllAlgorithms) names.emplace_back(to_string(a));
  return names;
}

const char* constants_key(Algorithm a) { return internal::algorithm_spec(a).constants_key; }

const char* algorithm_label(CollectiveOp op, Algorithm choice) {
  return op == CollectiveOp::send_recv || op == CollectiveOp::all_to_all ? "p2p" : to_string(choice);
}

const char* to_string(Protocol p) {
  switch (p) {
    case Protocol::ll: return "LL";
    case Protocol::ll128: return "LL128";
    case Protocol::simple: return "Simple";
  }
  return "?";
}

const char* to_string(Fidelity f) { return f == Fidelity::fluid ? "fluid" : "step"; }

const char* to_string(AllToAllMethod m) { return m == AllToAllMethod::nccl ? "nccl" : "hierarchical"; }

std::string NodeType::nvlink_topology_problem() const {
  if (nvlink_topology != NvlinkTopology::mesh) return "";
  if (gpus > kMaxMeshGpus) {
    return "a direct NVLink mesh is modelled for up to " + std::to_string(kMaxMeshGpus) + " GPUs per node, not " +
           std::to_string(gpus);
  }
  if (nvls) return "a direct NVLink mesh has no NVSwitch, so no NVLink SHARP (set nvls = false)";
  return "";
}

const char* to_string(Topology t) {
  switch (t) {
    case Topology::single_switch: return "single-switch";
    case Topology::fat_tree: return "fat-tree";
    case Topology::rail_optimized: return "rail-optimized";
  }
  return "?";
}

const char* to_string(Routing r) { return r == Routing::ecmp ? "ecmp" : "adaptive"; }

const char* to_string(HostCpu c) {
  switch (c) {
    case HostCpu::intel: return "intel";
    case HostCpu::amd: return "amd";
    case HostCpu::other: return "other";
  }
  return "?";
}

const char* to_string(NvlinkTopology t) { return t == NvlinkTopology::mesh ? "mesh" : "switch"; }

const char* to_string(NcclNet n) { return n == NcclNet::libfabric ? "Libfabric" : "IB"; }

std::optional<Topology> parse_topology(std::string_view name) {
  return parse_named(name, {Topology::single_switch, Topology::fat_tree, Topology::rail_optimized});
}
std::optional<Routing> parse_routing(std::string_view name) { return parse_named(name, {Routing::ecmp, Routing::adaptive}); }
std::optional<HostCpu> parse_host_cpu(std::string_view name) {
  return parse_named(name, {HostCpu::intel, HostCpu::amd, HostCpu::other});
}
std::optional<NvlinkTopology> parse_nvlink_topology(std::string_view name) {
  return parse_named(name, {NvlinkTopology::nvswitch, NvlinkTopology::mesh});
}
std::optional<NcclNet> parse_nccl_net(std::string_view name) {
  return parse_named(name, {NcclNet::ib, NcclNet::libfabric});
}

std::optional<CollectiveOp> parse_collective_op(std::string_view s) {
  // nccl-tests' and NCCL's spellings alike: allgather, all_gather, send_recv, all_to_all.
  std::string v(s);
  std::erase(v, '_');
  return parse_named_any_case(v, {CollectiveOp::all_gather, CollectiveOp::reduce_scatter, CollectiveOp::all_reduce,
                                  CollectiveOp::send_recv, CollectiveOp::all_to_all});
}

std::optional<Algorithm> parse_algorithm(std::string_view s) { return parse_named_any_case(s, kAllAlgorithms); }

std::optional<Protocol> parse_protocol(std::string_view s) {
  return parse_named_any_case(s, {Protocol::ll, Protocol::ll128, Protocol::simple});
}

std::optional<AllToAllMethod> parse_all_to_all_method(std::string_view s) {
  return parse_named_any_case(s, {AllToAllMethod::nccl, AllToAllMethod::hierarchical});
}

std::optional<Fidelity> parse_fidelity(std::string_view s) {
  return parse_named_any_case(s, {Fidelity::fluid, Fidelity::step});
}

}  // namespace commbound::network
