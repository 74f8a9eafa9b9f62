// FabricFit: how NCCL as implemented runs on one real fabric, in a few physical parameters fitted
// to that fabric's nccl-tests logs (commbound fit-fabric; calibration/fabric/<name>.toml).
//
// Why: NCCL's tuner constants (calibration/nccl/) are what NCCL *believes* a step costs, and the
// emulated cluster keeps using them to choose algorithms and protocols as NCCL would. They are not
// the time a step takes. With a fit, the time of a collective is built from mechanisms of NCCL's
// implementation instead, each priced by one parameter:
//   launch_s        once per collective: kernel launch and the work's setup
//                   (src/enqueue.cc: ncclLaunchKernel; replaces baseLat)
//   nvlink_hop_s    per NVLink/PCIe hop on a step's critical path: the sender's flag store after
//                   its data, the receiver's poll (src/device/prims_simple.h, prims_ll*.h)
//   net_hop_s       per network hop on the critical path: the proxy sees the step, posts the RDMA
//                   write, the remote proxy polls its completion and raises the flag
//                   (src/transport/net.cc sendProxyProgress / recvProxyProgress)
//   message_s       per FIFO message a connection carries (a Simple slice of sliceSteps steps, an
//                   LL or LL128 step), serialized with the channel's copies: the CTA's wait for
//                   its peer, its barriers, the system-scope fence and the flag post per slice
//                   (src/device/prims_simple.h genericOp), and on a network connection the
//                   proxy's isend per slice (src/transport/net.cc); it grows with the ranks a
//                   ring crosses, one message per step or more
//   nic_efficiency  achieved fraction of the NIC's line rate (RDMA headers, PCIe, the NIC)
//   nvls_latency_s  one in-switch reduction's latency (NVLS: multimem ld_reduce + st pipeline)
// Without a fit (FabricSpec::fit empty) the times are NCCL's tuner latencies: the model of
// commbound before fits existed, kept as the ideal reference.
#pragma once

#include <array>
#include <string>

namespace commbound::network {

struct FabricFit {
  std::string name;  // the calibration/fabric/<name>.toml it came from
  std::string node_type;  // the hardware the logs ran on (calibration/nodes.toml, links.toml)
  std::string link;
  double launch_s = 0;
  double nvlink_hop_s = 0;
  double net_hop_s = 0;
  double message_s = 0;
  double nic_efficiency = 1;
  double nvls_latency_s = 0;
};

// One fitted parameter as files and the fitter see it: its TOML key (unit in the name), the
// factor from that unit to SI, its bounds in the key's unit and why those bounds.
struct FitParameter {
  const char* key;
  double FabricFit::*field;
  double si_per_unit;
  double lower;
  double upper;
  const char* reason;
};

inline constexpr int kFitParameters = 6;
const std::array<FitParameter, kFitParameters>& fit_parameters();

}  // namespace commbound::network
