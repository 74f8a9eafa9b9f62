// CUDA support: every runtime call checked into an error value, and RAII owners for device memory,
// streams and events. CUDA translation units and GPU tests only.
#pragma once

#include "core/expected.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

namespace commbound::kernels {

// The CUDA call's failure as an Error naming what was being done; Ok on success.
inline Status cuda_check(cudaError_t code, const char* what) {
  if (code == cudaSuccess) return Ok{};
  return Error{std::string(what) + ": " + cudaGetErrorName(code) + " (" + cudaGetErrorString(code) + ")"};
}

// Number of usable CUDA devices; 0 when there is no driver or no GPU (never an error).
inline int cuda_device_count() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

// Device memory for `count` elements of T, freed on destruction.
template <class T>
class DeviceBuffer {
public:
  static Expected<DeviceBuffer> create(std::size_t count) {
    DeviceBuffer b;
    if (Status s = cuda_check(cudaMalloc(&b.ptr_, count * sizeof(T)), "cudaMalloc"); !s) return s.error();
    b.count_ = count;
    return Expected<DeviceBuffer>(std::move(b));
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(count_, o.count_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }

  T* get() const { return static_cast<T*>(ptr_); }
  std::size_t count() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

  Status upload(const void* host) const {
    return cuda_check(cudaMemcpy(ptr_, host, bytes(), cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
  Status download(void* host) const {
    return cuda_check(cudaMemcpy(host, ptr_, bytes(), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  }
  // Fills every byte with `value` (e.g. 0xff poisons bf16 outputs to NaN before a kernel runs).
  Status fill_bytes(int value) const { return cuda_check(cudaMemset(ptr_, value, bytes()), "cudaMemset"); }

private:
  DeviceBuffer() = default;
  void* ptr_ = nullptr;
  std::size_t count_ = 0;
};

// A CUDA event pair timing work on the default stream.
class EventTimer {
public:
  static Expected<EventTimer> create() {
    EventTimer t;
    if (Status s = cuda_check(cudaEventCreate(&t.start_), "cudaEventCreate"); !s) return s.error();
    if (Status s = cuda_check(cudaEventCreate(&t.stop_), "cudaEventCreate"); !s) return s.error();
    return Expected<EventTimer>(std::move(t));
  }
  EventTimer(EventTimer&& o) noexcept : start_(std::exchange(o.start_, nullptr)), stop_(std::exchange(o.stop_, nullptr)) {}
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  EventTimer& operator=(EventTimer&&) = delete;
  ~EventTimer() {
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stop_ != nullptr) cudaEventDestroy(stop_);
  }
  Status start() { return cuda_check(cudaEventRecord(start_), "cudaEventRecord"); }
  // Milliseconds since start(), after waiting for the work in between.
  Expected<float> elapsed_millis() {
    if (Status s = cuda_check(cudaEventRecord(stop_), "cudaEventRecord"); !s) return s.error();
    if (Status s = cuda_check(cudaEventSynchronize(stop_), "cudaEventSynchronize"); !s) return s.error();
    float ms = 0;
    if (Status s = cuda_check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime"); !s) return s.error();
    return ms;
  }

private:
  EventTimer() = default;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

// A CUDA stream owned for its lifetime. `non_blocking` streams (cudaStreamNonBlocking) never wait
// for the legacy default stream, so work on them overlaps with everything else, as NCCL's does.
enum class StreamOrdering { with_legacy_default, non_blocking };

class Stream {
public:
  static Expected<Stream> create(StreamOrdering ordering) {
    Stream s;
    const unsigned int flags = ordering == StreamOrdering::non_blocking ? cudaStreamNonBlocking : cudaStreamDefault;
    if (Status st = cuda_check(cudaStreamCreateWithFlags(&s.stream_, flags), "cudaStreamCreateWithFlags"); !st) {
      return st.error();
    }
    return Expected<Stream>(std::move(s));
  }
  Stream(Stream&& o) noexcept : stream_(std::exchange(o.stream_, nullptr)) {}
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream& operator=(Stream&&) = delete;
  ~Stream() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  cudaStream_t get() const { return stream_; }
  // Waits for all work queued on the stream.
  Status synchronize() const { return cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

private:
  Stream() = default;
  cudaStream_t stream_ = nullptr;
};

// A CUDA event with timing, owned for its lifetime: marks a point in a stream's work.
class Event {
public:
  static Expected<Event> create() {
    Event e;
    if (Status s = cuda_check(cudaEventCreate(&e.event_), "cudaEventCreate"); !s) return s.error();
    return Expected<Event>(std::move(e));
  }
  Event(Event&& o) noexcept : event_(std::exchange(o.event_, nullptr)) {}
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event& operator=(Event&&) = delete;
  ~Event() {
    if (event_ != nullptr) cudaEventDestroy(event_);
  }
  // Marks the current end of `stream`'s queued work.
  Status record(cudaStream_t stream) const { return cuda_check(cudaEventRecord(event_, stream), "cudaEventRecord"); }
  // Waits until the work before the recorded point has finished.
  Status synchronize() const { return cuda_check(cudaEventSynchronize(event_), "cudaEventSynchronize"); }
  // Whether the work before the recorded point has finished, without waiting.
  Expected<bool> completed() const {
    const cudaError_t code = cudaEventQuery(event_);
    if (code == cudaErrorNotReady) return false;
    if (Status s = cuda_check(code, "cudaEventQuery"); !s) return s.error();
    return true;
  }
  // Milliseconds from `start` to `stop`, both recorded and completed.
  static Expected<double> elapsed_ms(const Event& start, const Event& stop) {
    float ms = 0;
    if (Status s = cuda_check(cudaEventElapsedTime(&ms, start.event_, stop.event_), "cudaEventElapsedTime"); !s) {
      return s.error();
    }
    return static_cast<double>(ms);
  }

private:
  Event() = default;
  cudaEvent_t event_ = nullptr;
};

}  // namespace commbound::kernels
