// Board power and SM clock from NVML, read on a background thread at a fixed period, for the
// [power] calibration table (docs/calibration.md). NVML is loaded at run time (dlopen of
// libnvidia-ml.so.1), so this builds without nvml.h and runs, minus power data, without a driver.
// Host C++ only (no CUDA): its statistics are unit-tested on machines without a GPU.
#pragma once

#include "core/expected.hpp"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace commbound::kernels {

// One NVML reading: seconds since the sampler started, board power (W), SM clock (MHz).
struct PowerSample {
  double time_s = 0;
  double power_w = 0;
  double sm_clock_mhz = 0;
};

// Statistics of a run of samples; every field 0 when there were no samples.
struct PowerSummary {
  int samples = 0;
  double mean_power_w = 0;
  double min_power_w = 0;
  double max_power_w = 0;
  double mean_sm_clock_mhz = 0;
};

// Mean, minimum and maximum power and mean SM clock of `samples` (unweighted: the samples are
// evenly spaced in time); all zero for an empty vector.
PowerSummary summarize(const std::vector<PowerSample>& samples);

// An open NVML session on one GPU: dlopen + nvmlInit_v2 on creation, nvmlShutdown + dlclose on
// destruction. NVML is reference counted and thread safe, so several may coexist and the readers
// may be called from any thread.
class Nvml {
public:
  // NVML's device `device_index` (NVML numbers devices in PCI bus order, which need not be CUDA's
  // order). Error when the library is missing, NVML fails to initialise or there is no such device.
  static Expected<Nvml> open(unsigned int device_index);
  // The device at `pci_bus_id` ("domain:bus:device.function", as cudaDeviceGetPCIBusId writes it):
  // the way to reach the NVML device behind a CUDA device whatever the device order.
  static Expected<Nvml> open_pci_bus_id(const std::string& pci_bus_id);

  Nvml(Nvml&&) noexcept;
  Nvml& operator=(Nvml&&) noexcept;
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  ~Nvml();

  // Board power draw, watts (GPU and memory). On Ampere (except GA100) and newer GPUs, Hopper
  // included, NVML reports this averaged over the last second, not instantaneously.
  Expected<double> power_w() const;
  // Current SM clock, MHz.
  Expected<double> sm_clock_mhz() const;
  // The power limit the board enforces now, watts.
  Expected<double> power_limit_w() const;
  // The driver version, e.g. "580.159.04"; empty when NVML cannot tell.
  std::string driver_version() const;

private:
  struct Library;
  explicit Nvml(std::unique_ptr<Library> library);
  std::unique_ptr<Library> library_;
};

// Samples an Nvml's power and SM clock every `period_s` on a background thread between start()
// and stop(). The thread is stopped and joined by stop() or, at the latest, the destructor.
class PowerSampler {
public:
  // Samples `nvml`, which must outlive this sampler, every `period_s` seconds.
  PowerSampler(const Nvml& nvml, double period_s);
  PowerSampler(const PowerSampler&) = delete;
  PowerSampler& operator=(const PowerSampler&) = delete;
  ~PowerSampler();

  // Drops earlier samples and starts sampling (the first sample at time_s ~ 0). Error when already
  // running or when period_s is not positive.
  Status start();
  // Stops sampling and joins the thread. Error: the first NVML failure met while sampling (the
  // samples taken before it are kept). Stopping a stopped sampler is Ok.
  Status stop();
  // The samples so far, in time order (safe to call while sampling).
  std::vector<PowerSample> samples() const;
  // summarize(samples()).
  PowerSummary summary() const;

private:
  void sample_until_stopped();

  const Nvml& nvml_;
  double period_s_;
  std::thread thread_;
  mutable std::mutex mutex_;  // guards the members below
  std::condition_variable wake_;
  bool stop_requested_ = false;
  std::vector<PowerSample> samples_;
  std::optional<Error> error_;
};

}  // namespace commbound::kernels
