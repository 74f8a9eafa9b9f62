// NcclBench (nccl_bench.hpp). Sizes and text are host code; the measurement drives NCCL through
// the CUDA runtime API, with no kernel of ours: the data check runs on the host.
#include "kernels/host/nccl_bench.hpp"

#include "core/strprintf.hpp"
#include "kernels/device/cuda_support.hpp"
#include "kernels/host/internal/nccl_bench_check.hpp"

#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <utility>

namespace commbound::kernels {
namespace {

// NCCL's failure as an Error naming what was being done, with NCCL's last message (the detail
// ncclGetErrorString leaves out).
Status nccl_check(ncclResult_t code, const std::string& what) {
  if (code == ncclSuccess) return Ok{};
  std::string message = what + ": " + ncclGetErrorString(code);
  const char* last = ncclGetLastError(nullptr);
  if (last != nullptr && *last != '\0') message += std::string(" (") + last + ")";
  return Error{message};
}

// An NCCL communicator owned for its lifetime.
class NcclComm {
public:
  explicit NcclComm(ncclComm_t comm) : comm_(comm) {}
  NcclComm(NcclComm&& o) noexcept : comm_(std::exchange(o.comm_, nullptr)) {}
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  NcclComm& operator=(NcclComm&&) = delete;
  ~NcclComm() {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
  }
  ncclComm_t get() const { return comm_; }

private:
  ncclComm_t comm_ = nullptr;
};

// One GPU of the communicator. The communicator is declared last so that it is destroyed first,
// before the stream and buffers its work used (nccl-tests, src/common.cu, destroys the
// communicators before freeing the buffers too).
struct Rank {
  int device = 0;
  DeviceBuffer<std::byte> send;  // buffer_bytes, holding the check's input pattern
  DeviceBuffer<std::byte> recv;  // buffer_bytes
  Stream stream;
  NcclComm comm;
};

ncclDataType_t nccl_type(NcclBenchType type) {
  switch (type) {
    case NcclBenchType::float32: return ncclFloat32;
    case NcclBenchType::float16: return ncclFloat16;
    case NcclBenchType::bfloat16: return ncclBfloat16;
  }
  return ncclFloat32;
}

// nccl-tests' names for the 'type' and 'redop' columns (src/common.cu test_typenames, test_opnames;
// allgather runs no reduction and prints "none", src/all_gather.cu).
const char* type_name(NcclBenchType type) {
  switch (type) {
    case NcclBenchType::float32: return "float";
    case NcclBenchType::float16: return "half";
    case NcclBenchType::bfloat16: return "bfloat16";
  }
  return "?";
}

const char* redop_name(NcclBenchOp op) { return op == NcclBenchOp::all_gather ? "none" : "sum"; }

// "2.28.9" from ncclGetVersion's code: major*10000 + minor*100 + patch since NCCL 2.9,
// major*1000 + minor*100 + patch before (nccl.h, NCCL_VERSION).
std::string nccl_version_text(int code) {
  if (code >= 10000) return strprintf("%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
  return strprintf("%d.%d.%d", code / 1000, code / 100 % 10, code % 100);
}

// "13.0" from a CUDA version code (13000).
std::string cuda_version_text(int code) { return strprintf("%d.%d", code / 1000, code % 1000 / 10); }

// Elements of a device buffer compared on the host, downloaded this many bytes at a time.
constexpr std::size_t kCheckChunkBytes = std::size_t{64} << 20;

// Wrong elements of `segment` of the device output `out`.
Expected<long> count_wrong(const std::byte* out, const internal::Segment& segment, NcclBenchType type, int ranks) {
  const internal::Period period = internal::expected_period(segment, type, ranks);
  const std::size_t elt = element_bytes(type);
  std::vector<std::byte> host(std::min(segment.length * elt, kCheckChunkBytes));
  std::size_t phase = segment.offset % internal::kPatternPeriod;
  long wrong = 0;
  for (std::size_t done = 0; done < segment.length;) {
    const std::size_t n = std::min(host.size() / elt, segment.length - done);
    const std::byte* from = out + (segment.first + done) * elt;
    if (Status s = cuda_check(cudaMemcpy(host.data(), from, n * elt, cudaMemcpyDeviceToHost), "cudaMemcpy to host"); !s) {
      return s.error();
    }
    wrong += internal::count_mismatches(host.data(), n, type, period, phase);
    done += n;
  }
  return wrong;
}

}  // namespace

Expected<NcclBenchOp> parse_nccl_bench_op(const std::string& text) {
  if (text == "allreduce") return NcclBenchOp::all_reduce;
  if (text == "allgather") return NcclBenchOp::all_gather;
  if (text == "reducescatter") return NcclBenchOp::reduce_scatter;
  if (text == "sendrecv") return NcclBenchOp::send_recv;
  return Error{"--op " + text + ": not allreduce, allgather, reducescatter or sendrecv"};
}

Expected<NcclBenchType> parse_nccl_bench_type(const std::string& text) {
  if (text == "float") return NcclBenchType::float32;
  if (text == "half") return NcclBenchType::float16;
  if (text == "bfloat16") return NcclBenchType::bfloat16;
  return Error{"--dtype " + text + ": not float, half or bfloat16"};
}

Expected<std::size_t> parse_size_bytes(const std::string& text) {
  const std::string bad = text + ": not a size in bytes (8, 64K, 1.5M, 1G; K = 1024)";
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data() || !std::isfinite(value)) return Error{bad};
  std::string suffix(end, text.data() + text.size());
  double scale = 1;
  if (!suffix.empty()) {
    const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(suffix[0])));
    scale = unit == 'K' ? 0x1p10 : unit == 'M' ? 0x1p20 : unit == 'G' ? 0x1p30 : unit == 'T' ? 0x1p40 : 0;
    const std::string rest = suffix.substr(1);
    if (scale == 0 || !(rest.empty() || rest == "B" || rest == "iB")) return Error{bad};
  }
  const double bytes = value * scale;
  if (bytes < 1 || bytes != std::floor(bytes) || bytes > 0x1p60) {
    return Error{text + ": must be a whole number of bytes, at least 1"};
  }
  return static_cast<std::size_t>(bytes);
}

NcclTestsOp nccl_tests_op(NcclBenchOp op) {
  switch (op) {
    case NcclBenchOp::all_reduce: return NcclTestsOp::all_reduce;
    case NcclBenchOp::all_gather: return NcclTestsOp::all_gather;
    case NcclBenchOp::reduce_scatter: return NcclTestsOp::reduce_scatter;
    case NcclBenchOp::send_recv: return NcclTestsOp::send_recv;
  }
  COMMBOUND_CHECK(false, "an NcclBenchOp outside its enumerators");
  return NcclTestsOp::all_reduce;
}

std::size_t element_bytes(NcclBenchType type) { return type == NcclBenchType::float32 ? 4 : 2; }

Status check_options(const NcclBenchOptions& o) {
  if (o.gpus < 0) return Error{strprintf("--gpus %d: must be >= 0 (0: every visible GPU)", o.gpus)};
  if (o.min_bytes < 1) return Error{"-b/--min-bytes 0: must be at least 1 byte"};
  if (o.max_bytes < o.min_bytes) {
    return Error{strprintf("-b/--min-bytes %zu is larger than -e/--max-bytes %zu", o.min_bytes, o.max_bytes)};
  }
  if (o.step_factor < 2) return Error{strprintf("-f/--step-factor %zu: must be at least 2", o.step_factor)};
  if (o.warmup_iters < 0) return Error{strprintf("-w/--warmup %d: must be >= 0", o.warmup_iters)};
  if (o.iters < 1) return Error{strprintf("-n/--iters %d: must be at least 1", o.iters)};
  return Ok{};
}

std::vector<NcclBenchSize> plan_sizes(const NcclBenchOptions& o, int ranks) {
  COMMBOUND_CHECK(ranks >= 1, "plan_sizes needs at least one rank");
  std::vector<NcclBenchSize> out;
  if (!check_options(o)) return out;
  const std::size_t elt = element_bytes(o.type);
  const auto n = static_cast<std::size_t>(ranks);
  for (std::size_t s = o.min_bytes;; s *= o.step_factor) {
    const std::size_t count = s / elt;  // src/common.cu, setupArgs
    NcclBenchSize row;
    if (o.op == NcclBenchOp::all_gather || o.op == NcclBenchOp::reduce_scatter) {
      // src/all_gather.cu, src/reduce_scatter.cu (GetCollByteCount): each rank's share rounded
      // down to 16 bytes; the printed size is the whole gathered output / scattered input.
      const std::size_t granule = 16 / elt;
      row.count = count / n / granule * granule;
      row.size_bytes = row.count * n * elt;
    } else {
      row.count = count;
      row.size_bytes = count * elt;
    }
    if (row.count > 0) out.push_back(row);
    if (s > o.max_bytes / o.step_factor) break;  // the next size passes max_bytes
  }
  return out;
}

std::string format_header(const NcclBenchOptions& o, const NcclBenchSetup& setup) {
  std::string out = strprintf("# commbound-nccl-bench %s, %s (nccl-tests output format) nccl-headers=%d nccl-library=%d\n",
                              setup.tool_commit.c_str(), setup.date_utc.c_str(), setup.nccl_headers_code,
                              setup.nccl_library_code);
  out += strprintf("# NCCL version %s, CUDA runtime %s, driver %s\n", nccl_version_text(setup.nccl_library_code).c_str(),
                   cuda_version_text(setup.cuda_runtime_version).c_str(),
                   cuda_version_text(setup.cuda_driver_version).c_str());
  // src/util.cu, writeDeviceReport: what was run, then one line per rank.
  out += strprintf("# Collective test starting: %s\n", nccl_tests_binary(nccl_tests_op(o.op)));
  out += strprintf("# nThread 1 nGpus %zu minBytes %zu maxBytes %zu step: %zu(factor) warmup iters: %d iters: %d "
                   "agg iters: 1 validation: %d graph: 0 unalign: 0\n",
                   setup.devices.size(), o.min_bytes, o.max_bytes, o.step_factor, o.warmup_iters, o.iters,
                   o.check ? 1 : 0);
  out += "#\n# Using devices\n";
  for (std::size_t rank = 0; rank < setup.devices.size(); ++rank) {
    const NcclBenchDevice& d = setup.devices[rank];
    out += strprintf("#  Rank %2zu Group %2d Pid %6ld on %10s device %2d [%04x:%02x:%02x] %s\n", rank, 0, setup.pid,
                     setup.hostname.c_str(), d.cuda_device, static_cast<unsigned>(d.pci_domain),
                     static_cast<unsigned>(d.pci_bus), static_cast<unsigned>(d.pci_device), d.name.c_str());
  }
  return out + "#\n" + nccl_tests_column_heads();
}

std::string format_row(const NcclBenchOptions& o, const NcclBenchRow& row) {
  return nccl_tests_row({row.size.size_bytes, row.size.count, type_name(o.type), redop_name(o.op), row.out_of_place,
                         row.in_place});
}

std::string format_footer(const NcclBenchOptions& o, const std::vector<NcclBenchRow>& rows) {
  std::vector<NcclTestsRow> printed;
  for (const NcclBenchRow& r : rows) printed.push_back({r.size.size_bytes, r.size.count, "", "", r.out_of_place, r.in_place});
  return nccl_tests_footer(printed) +
         strprintf("# Collective test concluded: %s\n", nccl_tests_binary(nccl_tests_op(o.op)));
}

struct NcclBench::Impl {
  NcclBenchOptions options;
  NcclBenchSetup setup;
  std::vector<NcclBenchSize> sizes;
  std::size_t buffer_bytes = 0;  // each send and receive buffer: the largest size
  std::vector<Rank> ranks;

  int n() const { return static_cast<int>(ranks.size()); }

  // Fills rank r's send buffer with the pattern: one block of whole periods uploaded, then the
  // filled part copied after itself on the device until the buffer is full (a copy of a whole
  // number of periods continues the pattern). On the rank's stream, waited for: NCCL's work on
  // that non-blocking stream would not wait for copies on the legacy default stream.
  Status fill_pattern(int r) {
    const Rank& rank = ranks[static_cast<std::size_t>(r)];
    const std::size_t elt = element_bytes(options.type);
    const std::size_t count = buffer_bytes / elt;
    const std::size_t block = std::min<std::size_t>(count, internal::kPatternPeriod * 4096);
    std::vector<std::byte> host(block * elt);
    for (std::size_t i = 0; i < block; ++i) {
      const std::uint32_t bits = internal::bits_of_integer(options.type, internal::pattern_value(r, i));
      const auto half = static_cast<std::uint16_t>(bits);
      std::memcpy(host.data() + i * elt, elt == 4 ? static_cast<const void*>(&bits) : &half, elt);
    }
    std::byte* dst = rank.send.get();
    const cudaStream_t stream = rank.stream.get();
    if (Status s = cuda_check(cudaMemcpyAsync(dst, host.data(), host.size(), cudaMemcpyHostToDevice, stream),
                              "cudaMemcpyAsync to device");
        !s) {
      return s;
    }
    for (std::size_t filled = block; filled < count;) {
      const std::size_t n = std::min(filled, count - filled);
      if (Status s = cuda_check(cudaMemcpyAsync(dst + filled * elt, dst, n * elt, cudaMemcpyDeviceToDevice, stream),
                                "cudaMemcpyAsync");
          !s) {
        return s;
      }
      filled += n;
    }
    return rank.stream.synchronize();
  }

  // One launch of the collective on every rank, from this thread: NCCL needs the calls of all
  // ranks in one group (ncclGroupStart / ncclGroupEnd) to launch them together. Both pointers
  // move by `shift_bytes` (nccl-tests, src/common.cu startColl, rotates the buffers between
  // iterations). In place: allreduce works in the receive buffer; allgather's input is its
  // rank's block of the output; reducescatter's output its rank's block of the input; sendrecv
  // sends from the receive buffer (src/*.cu, GetCollByteCount's in-place offsets).
  Status launch(const NcclBenchSize& size, bool in_place, std::size_t shift_bytes) {
    const ncclDataType_t type = nccl_type(options.type);
    const std::size_t block_bytes = size.count * element_bytes(options.type);
    Status launched = nccl_check(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < n() && launched; ++r) {
      const Rank& rank = ranks[static_cast<std::size_t>(r)];
      std::byte* send = rank.send.get() + shift_bytes;
      std::byte* recv = rank.recv.get() + shift_bytes;
      std::byte* mine = recv + static_cast<std::size_t>(r) * block_bytes;
      const ncclComm_t comm = rank.comm.get();
      const cudaStream_t stream = rank.stream.get();
      switch (options.op) {
        case NcclBenchOp::all_reduce:
          launched = nccl_check(ncclAllReduce(in_place ? recv : send, recv, size.count, type, ncclSum, comm, stream),
                                "ncclAllReduce");
          break;
        case NcclBenchOp::all_gather:
          launched = nccl_check(ncclAllGather(in_place ? mine : send, recv, size.count, type, comm, stream), "ncclAllGather");
          break;
        case NcclBenchOp::reduce_scatter:
          launched = nccl_check(
              ncclReduceScatter(in_place ? recv : send, in_place ? mine : recv, size.count, type, ncclSum, comm, stream),
              "ncclReduceScatter");
          break;
        case NcclBenchOp::send_recv:
          // src/sendrecv.cu: rank i sends to i + 1 and receives from i - 1 (itself with one rank).
          launched = nccl_check(ncclSend(in_place ? recv : send, size.count, type, (r + 1) % n(), comm, stream), "ncclSend");
          if (launched) {
            launched = nccl_check(ncclRecv(recv, size.count, type, (r - 1 + n()) % n(), comm, stream), "ncclRecv");
          }
          break;
      }
    }
    Status ended = nccl_check(ncclGroupEnd(), "ncclGroupEnd");
    return launched ? ended : launched;
  }

  Status synchronize() const {
    for (const Rank& rank : ranks) {
      if (Status s = rank.stream.synchronize(); !s) return s;
    }
    return Ok{};
  }

  // Mean seconds per launch of `iters` back-to-back launches after `warmup_iters` untimed ones,
  // host-timed until every stream is done (src/common.cu, BenchTime).
  Expected<double> time_s(const NcclBenchSize& size, bool in_place) {
    const std::size_t slots = buffer_bytes / size.size_bytes;
    auto shift = [&](int iter) { return size.size_bytes * (static_cast<std::size_t>(iter) % slots); };
    for (int i = 0; i < options.warmup_iters; ++i) {
      if (Status s = launch(size, in_place, shift(i)); !s) return s.error();
    }
    if (Status s = synchronize(); !s) return s.error();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < options.iters; ++i) {
      if (Status s = launch(size, in_place, shift(i)); !s) return s.error();
    }
    if (Status s = synchronize(); !s) return s.error();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / options.iters;
  }

  // Wrong elements of one extra launch at the buffers' start, the receive buffers poisoned
  // (0xff bytes: NaN in all three types) and, in place, the input copied where the op reads it,
  // both on the rank's stream, so before the launch.
  Expected<long> wrong_elements(const NcclBenchSize& size, bool in_place) {
    const std::size_t elt = element_bytes(options.type);
    const std::size_t block_bytes = size.count * elt;
    for (int r = 0; r < n(); ++r) {
      const Rank& rank = ranks[static_cast<std::size_t>(r)];
      const cudaStream_t stream = rank.stream.get();
      if (Status s = cuda_check(cudaSetDevice(rank.device), "cudaSetDevice"); !s) return s.error();
      if (Status s = cuda_check(cudaMemsetAsync(rank.recv.get(), 0xff, size.size_bytes, stream), "cudaMemsetAsync"); !s) {
        return s.error();
      }
      if (!in_place || options.op == NcclBenchOp::send_recv) continue;
      const bool own_block = options.op == NcclBenchOp::all_gather;
      std::byte* to = rank.recv.get() + (own_block ? static_cast<std::size_t>(r) * block_bytes : 0);
      const std::size_t bytes = own_block ? block_bytes : size.size_bytes;
      if (Status s = cuda_check(cudaMemcpyAsync(to, rank.send.get(), bytes, cudaMemcpyDeviceToDevice, stream),
                                "cudaMemcpyAsync");
          !s) {
        return s.error();
      }
    }
    if (Status s = launch(size, in_place, 0); !s) return s.error();
    if (Status s = synchronize(); !s) return s.error();
    long wrong = 0;
    for (int r = 0; r < n(); ++r) {
      const Rank& rank = ranks[static_cast<std::size_t>(r)];
      if (Status s = cuda_check(cudaSetDevice(rank.device), "cudaSetDevice"); !s) return s.error();
      const bool scattered_in_place = in_place && options.op == NcclBenchOp::reduce_scatter;
      const std::byte* out = rank.recv.get() + (scattered_in_place ? static_cast<std::size_t>(r) * block_bytes : 0);
      for (const internal::Segment& segment : internal::expected_segments(options.op, n(), r, size.count)) {
        auto w = count_wrong(out, segment, options.type, n());
        if (!w) return w.error();
        wrong += *w;
      }
    }
    return wrong;
  }

  Expected<NcclBenchTiming> timing(const NcclBenchSize& size, bool in_place) {
    auto t = time_s(size, in_place);
    if (!t) return t.error();
    NcclBenchTiming out;
    out.time_s = *t;
    out.alg_bw_bytes_per_s = static_cast<double>(size.size_bytes) / *t;
    out.bus_bw_bytes_per_s = out.alg_bw_bytes_per_s * bus_bw_factor(nccl_tests_op(options.op), n());
    // nccl-tests does not check in-place sendrecv (src/sendrecv.cu sets reportErrors = 0).
    if (options.check && !(in_place && options.op == NcclBenchOp::send_recv)) {
      auto w = wrong_elements(size, in_place);
      if (!w) return w.error();
      out.wrong = *w;
    }
    return out;
  }
};

NcclBench::NcclBench(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NcclBench::~NcclBench() = default;
NcclBench::NcclBench(NcclBench&&) noexcept = default;
NcclBench& NcclBench::operator=(NcclBench&&) noexcept = default;

const NcclBenchSetup& NcclBench::setup() const { return impl_->setup; }
int NcclBench::ranks() const { return impl_->n(); }
const std::vector<NcclBenchSize>& NcclBench::sizes() const { return impl_->sizes; }

Expected<NcclBench> NcclBench::create(const NcclBenchOptions& options) {
  if (Status s = check_options(options); !s) return s.error();
  int visible = 0;
  const cudaError_t counted = cudaGetDeviceCount(&visible);
  if (counted != cudaSuccess) return Error{"no CUDA device: " + cuda_check(counted, "cudaGetDeviceCount").error().message};
  if (visible == 0) return Error{"no CUDA device"};
  const int ranks = options.gpus == 0 ? visible : options.gpus;
  if (ranks > visible) {
    return Error{strprintf("--gpus %d: only %d CUDA device%s visible", ranks, visible, visible == 1 ? "" : "s")};
  }
  if (options.check && ranks > internal::kMaxCheckedRanks) {
    return Error{strprintf("%d ranks: the data check is exact up to %d; pass -c 0", ranks, internal::kMaxCheckedRanks)};
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->sizes = plan_sizes(options, ranks);
  if (impl->sizes.empty()) {
    return Error{strprintf("every size from -b %zu to -e %zu rounds to 0 elements on %d ranks; raise -e",
                           options.min_bytes, options.max_bytes, ranks)};
  }
  for (const NcclBenchSize& s : impl->sizes) impl->buffer_bytes = std::max(impl->buffer_bytes, s.size_bytes);

  NcclBenchSetup& setup = impl->setup;
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) != 0) std::strcpy(host.data(), "unknown");
  setup.hostname = host.data();
  setup.pid = static_cast<long>(getpid());
  setup.nccl_headers_code = NCCL_VERSION_CODE;
  if (Status s = nccl_check(ncclGetVersion(&setup.nccl_library_code), "ncclGetVersion"); !s) return s.error();
  if (Status s = cuda_check(cudaRuntimeGetVersion(&setup.cuda_runtime_version), "cudaRuntimeGetVersion"); !s) {
    return s.error();
  }
  if (Status s = cuda_check(cudaDriverGetVersion(&setup.cuda_driver_version), "cudaDriverGetVersion"); !s) {
    return s.error();
  }
  for (int d = 0; d < ranks; ++d) {
    cudaDeviceProp prop{};
    if (Status s = cuda_check(cudaGetDeviceProperties(&prop, d), "cudaGetDeviceProperties"); !s) return s.error();
    setup.devices.push_back({d, prop.pciDomainID, prop.pciBusID, prop.pciDeviceID, prop.name});
  }

  // The communicators first (their own memory), each owned as soon as it exists.
  std::vector<ncclComm_t> raw(static_cast<std::size_t>(ranks), nullptr);
  std::vector<int> devices(static_cast<std::size_t>(ranks));
  std::iota(devices.begin(), devices.end(), 0);
  const std::string init = strprintf("ncclCommInitAll over %d GPUs", ranks);
  if (Status s = nccl_check(ncclCommInitAll(raw.data(), ranks, devices.data()), init); !s) return s.error();
  std::vector<NcclComm> comms;
  for (ncclComm_t c : raw) comms.emplace_back(c);

  impl->ranks.reserve(static_cast<std::size_t>(ranks));
  for (int d = 0; d < ranks; ++d) {
    const std::string on = strprintf("GPU %d: ", d);
    if (Status s = cuda_check(cudaSetDevice(d), "cudaSetDevice"); !s) return Error{on + s.error().message};
    auto send = DeviceBuffer<std::byte>::create(impl->buffer_bytes);
    auto recv = send ? DeviceBuffer<std::byte>::create(impl->buffer_bytes) : Expected<DeviceBuffer<std::byte>>(send.error());
    if (!recv) {
      return Error{strprintf("GPU %d: two buffers of %zu bytes (-e): %s", d, impl->buffer_bytes,
                             recv.error().message.c_str())};
    }
    auto stream = Stream::create(StreamOrdering::non_blocking);  // as nccl-tests' streams
    if (!stream) return Error{on + stream.error().message};
    impl->ranks.push_back(Rank{d, std::move(*send), std::move(*recv), std::move(*stream),
                               std::move(comms[static_cast<std::size_t>(d)])});
    if (Status s = impl->fill_pattern(d); !s) return Error{on + s.error().message};
  }
  return NcclBench(std::move(impl));
}

Expected<NcclBenchRow> NcclBench::measure(const NcclBenchSize& size) {
  COMMBOUND_CHECK(size.size_bytes > 0 && size.size_bytes <= impl_->buffer_bytes, "measure() of a size not in sizes()");
  NcclBenchRow row;
  row.size = size;
  auto out_of_place = impl_->timing(size, false);
  if (!out_of_place) return out_of_place.error();
  row.out_of_place = *out_of_place;
  auto in_place = impl_->timing(size, true);
  if (!in_place) return in_place.error();
  row.in_place = *in_place;
  return row;
}

}  // namespace commbound::kernels
