#include "sim/trace/kineto_reader.hpp"

#include "core/number_text.hpp"
#include "core/one_line.hpp"
#include "sim/trace/internal/json_file.hpp"
#include "core/units.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>

namespace commbound::sim {
namespace {

using nlohmann::json;

// A consumer may start this long before its producer's end and still be taken as waiting for it:
// the trace's timestamps are written in microseconds with three decimals (ns).
constexpr double kTimestampResolutionUs = 1e-3;
// Timestamps and durations beyond this many microseconds (some 31,700 years) are not a profile:
// a step's end (ts + dur) or an op's start (ts - the step's ts) would overflow to infinity.
constexpr double kMaxTimeUs = 1e18;
// NCCL's kernel names ("ncclDevKernel_AllGather_RING_LL") are read from their first this many characters.
constexpr std::size_t kMatchedChars = 256;

// Bytes of one element of a c10::ScalarType as PyTorch names it in "dtype" (c10/core/ScalarType.h).
double element_bytes_of(const std::string& dtype) {
  static const std::map<std::string, double> kBytes = {
      {"Byte", 1},        {"Char", 1},          {"Bool", 1},           {"QInt8", 1},          {"QUInt8", 1},
      {"Float8_e5m2", 1}, {"Float8_e4m3fn", 1}, {"Float8_e5m2fnuz", 1}, {"Float8_e4m3fnuz", 1}, {"Short", 2},
      {"Half", 2},        {"BFloat16", 2},      {"UInt16", 2},         {"Int", 4},            {"Float", 4},
      {"QInt32", 4},      {"UInt32", 4},        {"ComplexHalf", 4},    {"Long", 8},           {"Double", 8},
      {"UInt64", 8},      {"ComplexFloat", 8},  {"ComplexDouble", 16}};
  const auto it = kBytes.find(dtype);
  return it == kBytes.end() ? 0 : it->second;
}

// The collective of an NCCL kernel: from its name (ncclKernel_AllReduce_RING_LL_Sum_float,
// ncclDevKernel_AllGather_RING_LL), else from PyTorch's "Collective name" ("allreduce",
// "_allgather_base", "reduce_scatter_tensor_coalesced", "send", ...); "" when neither says. NCCL
// runs an all-to-all as grouped send/recv, so its kernel is ncclDevKernel_SendRecv: PyTorch's
// name ("all_to_all", "all_to_allv", "_all_to_all_single") says what it was.
std::string collective_op_of(const std::string& kernel, const std::string& collective_name) {
  static const std::regex kKernel(R"(^(?:void\s+)?nccl(?:Dev)?Kernel_([A-Za-z]+))");
  std::string n;
  for (char c : collective_name) {
    if (c != '_') n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  // The regex sees the name's first kMatchedChars: std::regex (libstdc++) recurses once per
  // character it matches, and a hostile name's run of letters would overflow the stack.
  const std::string head = kernel.substr(0, kMatchedChars);
  std::smatch m;
  if (std::regex_search(head, m, kKernel) && m[1] != "Generic") {
    return m[1] == "SendRecv" && n.find("alltoall") != std::string::npos ? "AllToAll" : std::string(m[1]);
  }
  if (n.find("allreduce") != std::string::npos) return "AllReduce";
  if (n.find("allgather") != std::string::npos) return "AllGather";
  if (n.find("reducescatter") != std::string::npos) return "ReduceScatter";
  if (n.find("alltoall") != std::string::npos) return "AllToAll";
  if (n.find("broadcast") != std::string::npos) return "Broadcast";
  if (n.find("send") != std::string::npos || n.find("recv") != std::string::npos) return "SendRecv";
  return n.empty() ? "" : collective_name;
}

bool is_nccl_kernel(const std::string& name) {
  return name.find("ncclKernel") != std::string::npos || name.find("ncclDevKernel") != std::string::npos;
}

template <typename T>
std::optional<T> field(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end()) return std::nullopt;
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) return std::nullopt;
  } else if constexpr (std::is_integral_v<T>) {
    if (!it->is_number_integer() && !it->is_number_unsigned()) return std::nullopt;
  } else {
    if (!it->is_number()) return std::nullopt;
  }
  return it->get<T>();
}

TraceCollective collective_of(const std::string& kernel, const json& args) {
  TraceCollective c;
  c.op = collective_op_of(kernel, field<std::string>(args, "Collective name").value_or(""));
  c.dtype = field<std::string>(args, "dtype").value_or("");
  c.element_bytes = element_bytes_of(c.dtype);
  c.group_name = field<std::string>(args, "Process Group Name").value_or("");
  c.group_description = field<std::string>(args, "Process Group Description").value_or("");
  if (const auto it = args.find("Process Group Ranks"); it != args.end()) {
    c.group_ranks = it->is_string() ? it->get<std::string>() : it->dump();
  }
  c.group_size = static_cast<int>(field<long>(args, "Group size").value_or(0));
  const double in = static_cast<double>(field<long>(args, "In msg nelems").value_or(0));
  const double out = static_cast<double>(field<long>(args, "Out msg nelems").value_or(0));
  // nccl-tests' whole buffer: AllGather's gathered output, ReduceScatter's full input, the one
  // buffer of AllReduce and Broadcast, what a SendRecv moves.
  const double elements = c.op == "AllGather" ? out : c.op == "SendRecv" ? std::max(in, out) : in;
  c.size_bytes = elements * c.element_bytes;
  return c;
}

// A GPU activity as read, before the step is cut out.
struct Activity {
  TraceOp op;
  double ts_us = 0;
  double end_us = 0;
  long correlation = -1;  // -1: none recorded
};

struct RuntimeCall {
  std::string name;
  double ts_us = 0;
  long thread = 0;
};

// A CUDA sync event of kind "Stream Wait Event": `stream` waited for the cudaEventRecord (by its
// correlation id) on `on_stream`; `correlation` is the cudaStreamWaitEvent call's.
struct StreamWait {
  long stream = 0;
  long on_stream = 0;
  long record_correlation = 0;
  long correlation = 0;
};

struct Step {
  long number = 0;
  double ts_us = 0;
  double dur_us = 0;
};

class Reader {
public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  Expected<KinetoTrace> read(std::optional<long> step) {
    trace_.path = path_;
    // Events (objects with "ph") the replay does not read are left out as they are parsed.
    auto doc = internal::read_json_file(path_, [](int depth, const json& object) {
      if (depth > 2 || !object.is_object() || !object.contains("ph")) return true;
      const std::string cat = field<std::string>(object, "cat").value_or("");
      return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "cuda_runtime" ||
             cat == "cuda_driver" || cat == "cuda_sync" ||
             field<std::string>(object, "name").value_or("").rfind("ProfilerStep#", 0) == 0;
    });
    if (!doc) return doc.error();
    const json* events = &*doc;
    if (doc->is_object()) {
      const auto it = doc->find("traceEvents");
      if (it == doc->end() || !it->is_array()) return Error{path_ + ": not a Chrome trace: no \"traceEvents\" array"};
      events = &*it;
      if (const auto info = doc->find("distributedInfo"); info != doc->end() && info->is_object()) {
        trace_.rank = static_cast<int>(field<long>(*info, "rank").value_or(-1));
        trace_.world_size = static_cast<int>(field<long>(*info, "world_size").value_or(0));
      }
    } else if (!doc->is_array()) {
      return Error{path_ + ": not a Chrome trace: expected an object with \"traceEvents\" or an array of events"};
    }
    for (std::size_t i = 0; i < events->size(); ++i) {
      if (Status s = take((*events)[i], i); !s) return s.error();
    }
    if (activities_.empty()) {
      return Error{path_ + ": no GPU activity (cat \"kernel\", \"gpu_memcpy\", \"gpu_memset\"): profile with "
                           "ProfilerActivity.CUDA (docs/traces.md)"};
    }
    link_waits();
    if (Status s = cut(step); !s) return s.error();
    return std::move(trace_);
  }

private:
  // "FILE: traceEvents[12] (kernel "name")".
  std::string at(std::size_t i, const json& e) const {
    const auto name = field<std::string>(e, "name").value_or("?");
    return path_ + ": traceEvents[" + std::to_string(i) + "] (" + field<std::string>(e, "cat").value_or("?") + " \"" +
           name.substr(0, 60) + "\")";
  }

  Expected<double> number(const json& e, std::size_t i, const char* key, bool non_negative) const {
    const auto it = e.find(key);
    if (it == e.end()) return Error{at(i, e) + ": no \"" + std::string(key) + "\""};
    if (!it->is_number() || !(std::abs(it->get<double>()) <= kMaxTimeUs) || (non_negative && it->get<double>() < 0)) {
      return Error{at(i, e) + ": \"" + key + "\" = " + it->dump() + ": expected a " +
                   (non_negative ? "number >= 0" : "number") + " (microseconds, at most 1e18 in magnitude)"};
    }
    return it->get<double>();
  }

  Status take(const json& e, std::size_t i) {
    if (!e.is_object()) return Error{path_ + ": traceEvents[" + std::to_string(i) + "] is not an object"};
    const std::string cat = field<std::string>(e, "cat").value_or("");
    const std::string ph = field<std::string>(e, "ph").value_or("");
    const std::string name = field<std::string>(e, "name").value_or("");
    static const json kNoArgs = json::object();
    const auto args_it = e.find("args");
    const json& args = args_it != e.end() && args_it->is_object() ? *args_it : kNoArgs;
    const bool gpu = cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
    if (gpu && ph == "X") {
      auto ts = number(e, i, "ts", false);
      if (!ts) return ts.error();
      auto dur = number(e, i, "dur", true);
      if (!dur) return dur.error();
      const std::optional<long> stream = field<long>(args, "stream") ? field<long>(args, "stream") : field<long>(e, "tid");
      if (!stream) return Error{at(i, e) + ": no integer \"stream\" in args nor \"tid\""};
      Activity a;
      a.op.name = name;
      a.op.activity = cat == "kernel" ? GpuActivity::kernel : cat == "gpu_memcpy" ? GpuActivity::memcpy : GpuActivity::memset;
      a.op.stream = *stream;
      a.op.duration_s = *dur * kSecondsPerUs;
      if (cat == "kernel" && is_nccl_kernel(name)) a.op.collective = collective_of(name, args);
      a.ts_us = *ts;
      a.end_us = *ts + *dur;
      a.correlation = field<long>(args, "correlation").value_or(-1);
      activities_.push_back(std::move(a));
      return Ok{};
    }
    if ((cat == "cuda_runtime" || cat == "cuda_driver") && ph == "X") {
      const auto correlation = field<long>(args, "correlation");
      if (!correlation) return Ok{};
      auto ts = number(e, i, "ts", false);
      if (!ts) return ts.error();
      RuntimeCall call{name, *ts, field<long>(e, "tid").value_or(0)};
      if (name == "cudaStreamWaitEvent") waits_.emplace_back(*correlation, call);
      runtime_[*correlation] = std::move(call);
      return Ok{};
    }
    if (cat == "cuda_sync" && field<std::string>(args, "cuda_sync_kind").value_or(name) == "Stream Wait Event") {
      const auto stream = field<long>(args, "stream");
      const auto on = field<long>(args, "wait_on_stream");
      const auto record = field<long>(args, "wait_on_cuda_event_record_corr_id");
      const auto correlation = field<long>(args, "correlation");
      if (stream && on && record && correlation && *record >= 0) syncs_.push_back({*stream, *on, *record, *correlation});
      return Ok{};
    }
    static const std::string kStep = "ProfilerStep#";
    if (ph == "X" && cat != "gpu_user_annotation" && name.rfind(kStep, 0) == 0) {
      // A step number that is not one (or too long for a long) leaves the event an ordinary annotation.
      const auto step = parse_number<long>(name.substr(kStep.size()));
      if (!step || *step < 0) return Ok{};
      auto ts = number(e, i, "ts", false);
      if (!ts) return ts.error();
      auto dur = number(e, i, "dur", true);
      if (!dur) return dur.error();
      steps_.push_back({*step, *ts, *dur});
    }
    return Ok{};
  }

  // dependencies_[consumer] = producers, over every activity of the trace (indices into activities_).
  void link_waits() {
    dependencies_.assign(activities_.size(), {});
    std::vector<int> by_launch;  // activities with a correlation id, in launch order
    std::map<long, std::vector<int>> stream_launches;
    for (std::size_t k = 0; k < activities_.size(); ++k) {
      if (activities_[k].correlation >= 0) by_launch.push_back(static_cast<int>(k));
    }
    auto correlation = [this](int k) { return activities_[static_cast<std::size_t>(k)].correlation; };
    std::sort(by_launch.begin(), by_launch.end(), [&](int a, int b) { return correlation(a) < correlation(b); });
    for (int k : by_launch) stream_launches[activities_[static_cast<std::size_t>(k)].op.stream].push_back(k);
    auto first_after = [&](const std::vector<int>& v, long c) {
      return std::upper_bound(v.begin(), v.end(), c, [&](long x, int k) { return x < correlation(k); });
    };
    auto first_not_before = [&](const std::vector<int>& v, long c) {
      return std::lower_bound(v.begin(), v.end(), c, [&](int k, long x) { return correlation(k) < x; });
    };
    trace_.sync_events = !syncs_.empty();
    if (trace_.sync_events) {
      for (const StreamWait& w : syncs_) {
        const auto& on = stream_launches[w.on_stream];
        const auto& waiting = stream_launches[w.stream];
        const auto producer = first_not_before(on, w.record_correlation);
        const auto consumer = first_after(waiting, w.correlation);
        if (producer == on.begin() || consumer == waiting.end()) continue;
        dependencies_[static_cast<std::size_t>(*consumer)].insert(*std::prev(producer));
      }
      return;
    }
    auto thread_of = [this](int k) -> std::optional<long> {
      const auto it = runtime_.find(activities_[static_cast<std::size_t>(k)].correlation);
      return it == runtime_.end() ? std::nullopt : std::optional<long>(it->second.thread);
    };
    for (const auto& [c, call] : waits_) {
      auto consumer = first_after(by_launch, c);
      while (consumer != by_launch.end() && thread_of(*consumer) != call.thread) ++consumer;
      if (consumer == by_launch.end()) continue;
      const long stream = activities_[static_cast<std::size_t>(*consumer)].op.stream;
      auto producer = first_not_before(by_launch, c);
      while (producer != by_launch.begin() && activities_[static_cast<std::size_t>(*std::prev(producer))].op.stream == stream) {
        --producer;
      }
      if (producer == by_launch.begin()) continue;
      dependencies_[static_cast<std::size_t>(*consumer)].insert(*std::prev(producer));
    }
  }

  // Keeps the activities of the chosen step, times from its start.
  Status cut(std::optional<long> wanted) {
    std::sort(steps_.begin(), steps_.end(), [](const Step& a, const Step& b) { return a.ts_us < b.ts_us; });
    for (const Step& s : steps_) trace_.steps.push_back("ProfilerStep#" + std::to_string(s.number));
    auto listed = [this] {
      std::string l;
      for (const auto& s : trace_.steps) l += (l.empty() ? "" : ", ") + s;
      return l;
    };
    double t0_us = 0, cpu_end_us = 0;
    std::vector<int> kept;
    if (steps_.empty()) {
      if (wanted) {
        return Error{path_ + ": no ProfilerStep#" + std::to_string(*wanted) +
                     ": the trace has no ProfilerStep annotations (leave workload.step out to replay it whole)"};
      }
      t0_us = activities_.front().ts_us;
      for (std::size_t k = 0; k < activities_.size(); ++k) {
        t0_us = std::min(t0_us, activities_[k].ts_us);
        kept.push_back(static_cast<int>(k));
      }
      cpu_end_us = t0_us;
    } else {
      const auto step = wanted ? std::find_if(steps_.begin(), steps_.end(), [&](const Step& s) { return s.number == *wanted; })
                               : steps_.begin();
      if (step == steps_.end()) {
        return Error{path_ + ": no ProfilerStep#" + std::to_string(*wanted) + " (the trace has " + listed() + ")"};
      }
      trace_.step = "ProfilerStep#" + std::to_string(step->number);
      t0_us = step->ts_us;
      cpu_end_us = step->ts_us + step->dur_us;
      trace_.cpu_step_s = step->dur_us * kSecondsPerUs;
      for (std::size_t k = 0; k < activities_.size(); ++k) {
        const Activity& a = activities_[k];
        const auto call = runtime_.find(a.correlation);
        const double launched_us = call != runtime_.end() ? call->second.ts_us : a.ts_us;
        if (launched_us >= t0_us && launched_us < cpu_end_us) kept.push_back(static_cast<int>(k));
      }
      if (kept.empty()) return Error{path_ + ": " + trace_.step + " launched no GPU activity"};
    }
    auto start = [this](int k) { return activities_[static_cast<std::size_t>(k)].ts_us; };
    std::stable_sort(kept.begin(), kept.end(), [&](int a, int b) { return start(a) < start(b); });
    std::map<int, int> local;
    for (std::size_t i = 0; i < kept.size(); ++i) local[kept[i]] = static_cast<int>(i);
    double end_us = cpu_end_us;
    for (int k : kept) {
      Activity& a = activities_[static_cast<std::size_t>(k)];
      a.op.start_s = (a.ts_us - t0_us) * kSecondsPerUs;
      end_us = std::max(end_us, a.end_us);
      for (int p : dependencies_[static_cast<std::size_t>(k)]) {
        const auto producer = local.find(p);
        if (producer == local.end()) continue;  // launched before the step: done by its start
        if (a.ts_us < activities_[static_cast<std::size_t>(p)].end_us - kTimestampResolutionUs) {
          ++trace_.contradicted_dependencies;
          continue;
        }
        a.op.deps.push_back(producer->second);
      }
      trace_.ops.push_back(std::move(a.op));
    }
    trace_.iteration_s = (end_us - t0_us) * kSecondsPerUs;
    return Ok{};
  }

  std::string path_;
  KinetoTrace trace_;
  std::vector<Activity> activities_;
  std::map<long, RuntimeCall> runtime_;
  std::vector<std::pair<long, RuntimeCall>> waits_;
  std::vector<StreamWait> syncs_;
  std::vector<Step> steps_;
  std::vector<std::set<int>> dependencies_;
};

}  // namespace

Expected<KinetoTrace> read_kineto_trace(const std::string& path, std::optional<long> step) {
  auto trace = Reader(path).read(step);
  if (!trace) return one_line(trace.error());  // a kernel name may hold a newline
  return trace;
}

}  // namespace commbound::sim
