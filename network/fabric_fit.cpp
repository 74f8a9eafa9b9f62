#include "network/fabric_fit.hpp"

#include "core/units.hpp"

namespace commbound::network {

const std::array<FitParameter, kFitParameters>& fit_parameters() {
  static const std::array<FitParameter, kFitParameters> parameters = {{
      {"launch_us", &FabricFit::launch_s, kSecondsPerUs, 1.0, 60.0,
       "a kernel launch is >= 1 us on a GPU; NCCL's largest baseLat is 14 us, x4 for setup on a busy host"},
      {"nvlink_hop_us", &FabricFit::nvlink_hop_s, kSecondsPerUs, 0.2, 8.0,
       "a flag store + poll over NVLink is >= 0.2 us; NCCL's hwLat[NVLink] tops out at 4 us, x2"},
      {"net_hop_us", &FabricFit::net_hop_s, kSecondsPerUs, 1.0, 40.0,
       "an RDMA write + completion is >= 1 us on IB; NCCL's hwLat[NET] Simple is 14 us, ~x3 for RoCE and busy proxies"},
      {"message_us", &FabricFit::message_s, kSecondsPerUs, 0.0, 20.0,
       "0 when a channel overlaps its per-slice sync with its copies; a few us of fence, barriers and isend when it does not"},
      {"nic_efficiency", &FabricFit::nic_efficiency, 1.0, 0.6, 1.0,
       "a healthy RDMA NIC reaches 90-98% of line rate (ib_write_bw); below 60% is a broken fabric, not a fit"},
      {"nvls_latency_us", &FabricFit::nvls_latency_s, kSecondsPerUs, 5.0, 150.0,
       "NCCL's hwLat[NVLS] is 25 us; the in-switch pipeline fills with up to 64 chunks of 128 KiB"},
  }};
  return parameters;
}

}  // namespace commbound::network
