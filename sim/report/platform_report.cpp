#include "sim/report/platform_report.hpp"

#include "core/units.hpp"

#include <fmt/format.h>

#include <string>

namespace commbound::sim {

void write_platform_summary(std::ostream& out, const Scenario& scenario, const network::Platform& platform) {
  const auto& cl = scenario.cluster;
  const auto& nd = cl.node;
  out << "platform: " << cl.nodes << " x " << nd.name << " = " << cl.gpus() << " GPUs (" << nd.gpu << ")\n"
      << "  NVLink  " << nd.nvlink.name << ": " << nd.nvlink.effective_bw_bytes_per_s() / kBytesPerGB
      << " GB/s per GPU per direction (" << nd.nvlink.bw_bytes_per_s / kBytesPerGB << " x " << nd.nvlink.efficiency << ")"
      << (nd.nvlink_topology == network::NvlinkTopology::mesh
              ? fmt::format(", direct mesh (no NVSwitch): {:g} GB/s per GPU pair", nd.nvlink_link_bw_bytes_per_s() / kBytesPerGB)
              : std::string(", NVSwitch"))
      << (nd.nvls ? ", NVLS" : "") << "\n"
      << "  PCIe    " << nd.pcie.name << ": " << nd.pcie.effective_bw_bytes_per_s() / kBytesPerGB << " GB/s\n"
      << "  NICs    " << nd.nics << " per node, " << cl.fabric.link.name << ": "
      << cl.fabric.link.effective_bw_bytes_per_s() / kBytesPerGB << " GB/s per direction\n"
      << "  fabric  " << network::to_string(cl.fabric.topology) << ", " << platform.fabric_levels() << " level(s), "
      << platform.leaf_switches() << " leaf switch(es) of radix " << cl.fabric.switch_radix << " ("
      << platform.leaf_down_ports() << " down / " << platform.leaf_up_ports() << " up ports), "
      << network::to_string(cl.fabric.routing) << " routing, " << cl.fabric.switch_latency_s * kNsPerS << " ns per switch\n"
      << "  NCCL    " << scenario.nccl.release << " model, " << nd.nccl_channels << " channels\n";
}

}  // namespace commbound::sim
