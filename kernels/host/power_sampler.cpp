// NVML through dlopen, and the background power sampler. The NVML entry points are declared here by
// hand (no nvml.h is needed) from the NVML API reference, https://docs.nvidia.com/deploy/nvml-api/:
// "Initialization and Cleanup" (nvmlInit_v2, nvmlShutdown), "Error reporting" (nvmlErrorString),
// "System Queries" (nvmlSystemGetDriverVersion), "Device Queries" (nvmlDeviceGetHandleByIndex_v2,
// nvmlDeviceGetHandleByPciBusId_v2, nvmlDeviceGetPowerUsage and nvmlDeviceGetEnforcedPowerLimit in
// milliwatts, nvmlDeviceGetClockInfo in MHz) and the nvmlClockType_t enum (NVML_CLOCK_SM = 1).
#include "kernels/host/power_sampler.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

// nvmlDevice_t is an opaque pointer to this incomplete type (as nvml.h declares it).
struct nvmlDevice_st;

namespace commbound::kernels {
namespace {

using NvmlReturn = int;  // nvmlReturn_t
using NvmlDevice = nvmlDevice_st*;
constexpr NvmlReturn kNvmlSuccess = 0;                // NVML_SUCCESS
constexpr int kNvmlClockSm = 1;                       // NVML_CLOCK_SM
constexpr unsigned int kNvmlDriverVersionBytes = 80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
constexpr double kWattsPerMilliwatt = 1e-3;

// The address of `name` in `library`, as a pointer to function type F; nullptr when missing.
template <class F>
F symbol(void* library, const char* name) {
  void* address = dlsym(library, name);
  F f = nullptr;
  static_assert(sizeof(f) == sizeof(address));
  std::memcpy(&f, &address, sizeof(f));  // POSIX guarantees object and function pointers convert
  return f;
}

}  // namespace

// The loaded library, its entry points and the device handle; shuts NVML down and unloads it.
struct Nvml::Library {
  void* handle = nullptr;
  bool initialized = false;
  NvmlDevice device = nullptr;

  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  const char* (*error_string)(NvmlReturn) = nullptr;
  NvmlReturn (*handle_by_index)(unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*handle_by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*power_usage)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*clock_info)(NvmlDevice, int, unsigned int*) = nullptr;
  NvmlReturn (*enforced_power_limit)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*driver_version)(char*, unsigned int) = nullptr;

  Library() = default;
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  ~Library() {
    if (initialized) shutdown();
    if (handle != nullptr) dlclose(handle);
  }

  // Ok, or an Error naming the call and NVML's reason.
  Status check(NvmlReturn code, const char* what) const {
    if (code == kNvmlSuccess) return Ok{};
    const char* reason = error_string != nullptr ? error_string(code) : "unknown error";
    return Error{std::string("NVML ") + what + ": " + reason + " (code " + std::to_string(code) + ")"};
  }

  // Loads libnvidia-ml.so.1, resolves every entry point and initialises NVML.
  static Expected<std::unique_ptr<Library>> load() {
    auto lib = std::make_unique<Library>();
    lib->handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib->handle == nullptr) {
      const char* why = dlerror();
      return Error{std::string("cannot load libnvidia-ml.so.1 (NVML): ") + (why != nullptr ? why : "unknown")};
    }
    void* h = lib->handle;
    lib->init = symbol<decltype(lib->init)>(h, "nvmlInit_v2");
    lib->shutdown = symbol<decltype(lib->shutdown)>(h, "nvmlShutdown");
    lib->error_string = symbol<decltype(lib->error_string)>(h, "nvmlErrorString");
    lib->handle_by_index = symbol<decltype(lib->handle_by_index)>(h, "nvmlDeviceGetHandleByIndex_v2");
    lib->handle_by_pci_bus_id = symbol<decltype(lib->handle_by_pci_bus_id)>(h, "nvmlDeviceGetHandleByPciBusId_v2");
    lib->power_usage = symbol<decltype(lib->power_usage)>(h, "nvmlDeviceGetPowerUsage");
    lib->clock_info = symbol<decltype(lib->clock_info)>(h, "nvmlDeviceGetClockInfo");
    lib->enforced_power_limit = symbol<decltype(lib->enforced_power_limit)>(h, "nvmlDeviceGetEnforcedPowerLimit");
    lib->driver_version = symbol<decltype(lib->driver_version)>(h, "nvmlSystemGetDriverVersion");
    if (lib->init == nullptr || lib->shutdown == nullptr || lib->error_string == nullptr ||
        lib->handle_by_index == nullptr || lib->handle_by_pci_bus_id == nullptr || lib->power_usage == nullptr ||
        lib->clock_info == nullptr || lib->enforced_power_limit == nullptr || lib->driver_version == nullptr) {
      return Error{"libnvidia-ml.so.1 lacks an NVML entry point commbound needs (driver too old?)"};
    }
    if (Status s = lib->check(lib->init(), "nvmlInit_v2"); !s) return s.error();
    lib->initialized = true;
    return lib;
  }

  Expected<double> read_mw_as_w(NvmlReturn (*read)(NvmlDevice, unsigned int*), const char* what) const {
    unsigned int milliwatts = 0;
    if (Status s = check(read(device, &milliwatts), what); !s) return s.error();
    return static_cast<double>(milliwatts) * kWattsPerMilliwatt;
  }
};

Nvml::Nvml(std::unique_ptr<Library> library) : library_(std::move(library)) {}
Nvml::Nvml(Nvml&&) noexcept = default;
Nvml& Nvml::operator=(Nvml&&) noexcept = default;
Nvml::~Nvml() = default;

Expected<Nvml> Nvml::open(unsigned int device_index) {
  auto lib = Library::load();
  if (!lib) return lib.error();
  Library& l = **lib;
  if (Status s = l.check(l.handle_by_index(device_index, &l.device), "nvmlDeviceGetHandleByIndex_v2"); !s) {
    return Error{s.error().message + " for device " + std::to_string(device_index)};
  }
  return Nvml(std::move(*lib));
}

Expected<Nvml> Nvml::open_pci_bus_id(const std::string& pci_bus_id) {
  auto lib = Library::load();
  if (!lib) return lib.error();
  Library& l = **lib;
  if (Status s = l.check(l.handle_by_pci_bus_id(pci_bus_id.c_str(), &l.device), "nvmlDeviceGetHandleByPciBusId_v2"); !s) {
    return Error{s.error().message + " for PCI bus id " + pci_bus_id};
  }
  return Nvml(std::move(*lib));
}

Expected<double> Nvml::power_w() const {
  return library_->read_mw_as_w(library_->power_usage, "nvmlDeviceGetPowerUsage");
}

Expected<double> Nvml::power_limit_w() const {
  return library_->read_mw_as_w(library_->enforced_power_limit, "nvmlDeviceGetEnforcedPowerLimit");
}

Expected<double> Nvml::sm_clock_mhz() const {
  unsigned int mhz = 0;
  if (Status s = library_->check(library_->clock_info(library_->device, kNvmlClockSm, &mhz), "nvmlDeviceGetClockInfo");
      !s) {
    return s.error();
  }
  return static_cast<double>(mhz);
}

std::string Nvml::driver_version() const {
  char version[kNvmlDriverVersionBytes] = {};
  if (library_->driver_version(version, kNvmlDriverVersionBytes) != kNvmlSuccess) return {};
  return version;
}

PowerSummary summarize(const std::vector<PowerSample>& samples) {
  PowerSummary s;
  if (samples.empty()) return s;
  s.samples = static_cast<int>(samples.size());
  s.min_power_w = samples.front().power_w;
  s.max_power_w = samples.front().power_w;
  double power_sum_w = 0;
  double clock_sum_mhz = 0;
  for (const PowerSample& x : samples) {
    power_sum_w += x.power_w;
    clock_sum_mhz += x.sm_clock_mhz;
    s.min_power_w = std::min(s.min_power_w, x.power_w);
    s.max_power_w = std::max(s.max_power_w, x.power_w);
  }
  s.mean_power_w = power_sum_w / static_cast<double>(samples.size());
  s.mean_sm_clock_mhz = clock_sum_mhz / static_cast<double>(samples.size());
  return s;
}

PowerSampler::PowerSampler(const Nvml& nvml, double period_s) : nvml_(nvml), period_s_(period_s) {}

PowerSampler::~PowerSampler() {
  // The destructor cannot report a sampling error; stop() is where callers see it.
  static_cast<void>(stop());
}

Status PowerSampler::start() {
  if (!(period_s_ > 0)) return Error{"PowerSampler: period_s = " + std::to_string(period_s_) + " must be positive"};
  if (thread_.joinable()) return Error{"PowerSampler: start() while already sampling"};
  {
    std::lock_guard lock(mutex_);
    stop_requested_ = false;
    samples_.clear();
    error_.reset();
  }
  thread_ = std::thread([this] { sample_until_stopped(); });
  return Ok{};
}

Status PowerSampler::stop() {
  if (!thread_.joinable()) return Ok{};
  {
    std::lock_guard lock(mutex_);
    stop_requested_ = true;
  }
  wake_.notify_all();
  thread_.join();
  std::lock_guard lock(mutex_);
  if (error_) return *error_;
  return Ok{};
}

std::vector<PowerSample> PowerSampler::samples() const {
  std::lock_guard lock(mutex_);
  return samples_;
}

PowerSummary PowerSampler::summary() const { return summarize(samples()); }

// Reads at t0 + k * period (k = 0, 1, ...); a read slower than the period skips the ticks it
// overran instead of bunching the next samples together.
void PowerSampler::sample_until_stopped() {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = Clock::now();
  const std::chrono::duration<double> period(period_s_);
  std::unique_lock lock(mutex_);
  while (!stop_requested_) {
    lock.unlock();
    const double time_s = std::chrono::duration<double>(Clock::now() - t0).count();
    const Expected<double> power_w = nvml_.power_w();
    const Expected<double> clock_mhz = nvml_.sm_clock_mhz();
    lock.lock();
    if (!power_w || !clock_mhz) {
      error_ = !power_w ? power_w.error() : clock_mhz.error();
      return;
    }
    samples_.push_back({time_s, *power_w, *clock_mhz});
    const double elapsed_periods = std::chrono::duration<double>(Clock::now() - t0) / period;
    const auto next = t0 + std::chrono::duration_cast<Clock::duration>(period * (std::floor(elapsed_periods) + 1));
    wake_.wait_until(lock, next, [this] { return stop_requested_; });
  }
}

}  // namespace commbound::kernels
