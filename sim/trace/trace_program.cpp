#include "sim/trace/trace_program.hpp"

#include "core/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace commbound::sim {
namespace {

// Gaps shorter than this are timestamp rounding, not host time: the trace writes microseconds with
// three decimals.
constexpr double kMinGapS = 1e-9;

// The streams after compute, in the order the trace's other CUDA streams take them.
constexpr StreamId kOtherStreams[] = {StreamId::all_gather,
                                      StreamId::reduce_scatter,
                                      StreamId::tensor_parallel,
                                      StreamId::pipeline_recv_activation,
                                      StreamId::pipeline_send_activation,
                                      StreamId::pipeline_recv_gradient,
                                      StreamId::pipeline_send_gradient,
                                      StreamId::context_parallel,
                                      StreamId::expert_parallel};

std::optional<network::CollectiveOp> engine_op(const std::string& op) {
  if (op == "AllReduce") return network::CollectiveOp::all_reduce;
  if (op == "AllGather") return network::CollectiveOp::all_gather;
  if (op == "ReduceScatter") return network::CollectiveOp::reduce_scatter;
  if (op == "SendRecv" || op == "Send" || op == "Recv") return network::CollectiveOp::send_recv;
  if (op == "AllToAll") return network::CollectiveOp::all_to_all;
  return std::nullopt;  // Broadcast, Reduce: not modelled by the engine
}

// "void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)" -> "at::native::vectorized_elementwise_kernel".
std::string short_name(const std::string& name) {
  std::string s = name.rfind("void ", 0) == 0 ? name.substr(5) : name;
  s = s.substr(0, std::min(s.find('('), s.find('<')));
  return s.empty() ? name : s;
}

OpKind kind_of(const TraceOp& t) {
  if (t.collective) return OpKind::collective;
  if (t.activity != GpuActivity::kernel) return OpKind::elementwise;
  std::string n = t.name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* gemm : {"gemm", "cutlass", "xmma", "cublas"}) {
    if (n.find(gemm) != std::string::npos) return OpKind::gemm;
  }
  for (const char* attention : {"flash", "fmha", "attention"}) {
    if (n.find(attention) != std::string::npos) return OpKind::attention;
  }
  return OpKind::elementwise;
}

std::string kind_names() {
  std::string s;
  for (GroupKind g : kGroupKinds) s += (s.empty() ? "" : ", ") + std::string(to_string(g));
  return s;
}

class Builder {
public:
  Builder(const KinetoTrace& trace, const TraceWorkload& workload) : trace_(trace), workload_(workload) {}

  Expected<TraceProgram> build() {
    if (trace_.ops.empty()) return Error{workload_.origin + ": " + trace_.path + ": no GPU activity to replay"};
    if (Status s = map_groups(); !s) return s.error();
    if (Status s = map_streams(); !s) return s.error();
    std::map<long, int> last_on_stream;      // trace stream -> program index of its last op
    std::map<long, double> end_on_stream_s;  // ... and that op's measured end
    std::vector<int> index_of(trace_.ops.size(), -1);
    double last_end_s = 0;
    for (std::size_t k = 0; k < trace_.ops.size(); ++k) {
      const TraceOp& t = trace_.ops[k];
      Op op;
      op.name = short_name(t.name);
      op.stream = streams_.at(t.stream);
      op.kind = kind_of(t);
      op.fixed_s = t.duration_s;
      double ready_s = 0;  // the step's start
      if (const auto prev = end_on_stream_s.find(t.stream); prev != end_on_stream_s.end()) ready_s = prev->second;
      for (int d : t.deps) {
        const TraceOp& producer = trace_.ops[static_cast<std::size_t>(d)];
        ready_s = std::max(ready_s, producer.start_s + producer.duration_s);
        op.deps.push_back(index_of[static_cast<std::size_t>(d)]);
      }
      if (t.collective) collective(t, k, op);
      if (const double gap_s = t.start_s - ready_s; gap_s > kMinGapS) {
        Op host;
        host.name = "host";
        host.stream = op.stream;
        host.kind = OpKind::host;
        host.fixed_s = gap_s;
        host.deps = op.deps;
        out_.program.ops.push_back(std::move(host));
        ++host_gaps_;
        host_s_ += gap_s;
      }
      waits_ += static_cast<int>(t.deps.size());
      index_of[k] = static_cast<int>(out_.program.ops.size());
      last_on_stream[t.stream] = index_of[k];
      end_on_stream_s[t.stream] = t.start_s + t.duration_s;
      last_end_s = std::max(last_end_s, t.start_s + t.duration_s);
      out_.program.ops.push_back(std::move(op));
    }
    // The step's CPU time after its last GPU op (data loading, logging, the next step's set-up).
    if (const double tail_s = trace_.iteration_s - last_end_s; tail_s > kMinGapS) {
      Op host;
      host.name = "host.after_last_gpu_op";
      host.stream = StreamId::compute;
      host.kind = OpKind::host;
      host.fixed_s = tail_s;
      for (const auto& [stream, index] : last_on_stream) host.deps.push_back(index);
      out_.program.ops.push_back(std::move(host));
      ++host_gaps_;
      host_s_ += tail_s;
    }
    out_.measured_iteration_s = trace_.iteration_s;
    out_.description = describe();
    return std::move(out_);
  }

private:
  // Each process group's kind, from [workload.groups] (by name, then by description); a group of
  // the whole traced world that is not listed is data-parallel. Only what a simulated collective
  // needs is required.
  Status map_groups() {
    for (const TraceWorkload::Group& g : workload_.groups) {
      if (!parse_group_kind(g.kind)) {
        return Error{g.origin + ": workload.groups." + g.trace_group + " = \"" + g.kind + "\": expected one of " + kind_names()};
      }
    }
    if (!workload_.simulate_collectives) return Ok{};
    for (const TraceOp& t : trace_.ops) {
      if (!t.collective || !engine_op(t.collective->op) || t.collective->size_bytes <= 0) continue;
      const TraceCollective& c = *t.collective;
      if (kinds_.count(key_of(c)) > 0) continue;
      const auto mapped = std::find_if(workload_.groups.begin(), workload_.groups.end(), [&](const TraceWorkload::Group& g) {
        return g.trace_group == c.group_name || (!c.group_description.empty() && g.trace_group == c.group_description);
      });
      if (mapped != workload_.groups.end()) {
        kinds_[key_of(c)] = *parse_group_kind(mapped->kind);
      } else if ((trace_.world_size > 0 && c.group_size == trace_.world_size) || (c.group_name.empty() && c.group_size == 0)) {
        kinds_[key_of(c)] = GroupKind::data_parallel;
      } else {
        return Error{workload_.origin + ": " + trace_.path + ": process group \"" + c.group_name + "\" (\"" +
                     c.group_description + "\", " + std::to_string(c.group_size) + " ranks " + c.group_ranks +
                     ") is not in [workload.groups]: map it to one of " + kind_names()};
      }
    }
    return Ok{};
  }

  static std::string key_of(const TraceCollective& c) { return c.group_name + "\n" + c.group_description; }

  void collective(const TraceOp& t, std::size_t k, Op& op) {
    const TraceCollective& c = *t.collective;
    op.name = "nccl." + (c.op.empty() ? std::string("unknown") : c.op) + "." + std::to_string(k);
    ++collectives_;
    const auto engine = engine_op(c.op);
    if (!workload_.simulate_collectives) return;  // measured: keeps fixed_s
    if (!engine) {
      ++kept_unmodelled_[c.op.empty() ? "unknown" : c.op];
      return;
    }
    if (c.size_bytes <= 0) {
      ++kept_unsized_;
      return;
    }
    op.fixed_s.reset();
    op.collective = *engine;
    op.group = kinds_.at(key_of(c));
    op.size_bytes = c.size_bytes;
    ++simulated_;
  }

  // The stream with the most non-NCCL time computes; the others follow in order of first use.
  Status map_streams() {
    std::map<long, double> compute_s;
    std::vector<long> order;
    for (const TraceOp& t : trace_.ops) {
      if (!compute_s.count(t.stream)) order.push_back(t.stream);
      compute_s[t.stream] += t.collective ? 0 : t.duration_s;
    }
    if (order.size() > static_cast<std::size_t>(kStreams)) {
      return Error{workload_.origin + ": " + trace_.path + ": " + std::to_string(order.size()) +
                   " CUDA streams; the engine replays at most " + std::to_string(kStreams)};
    }
    const long compute = std::max_element(compute_s.begin(), compute_s.end(), [](const auto& a, const auto& b) {
                           return a.second < b.second;
                         })->first;
    streams_[compute] = StreamId::compute;
    std::size_t next = 0;
    for (long s : order) {
      if (s != compute) streams_[s] = kOtherStreams[next++];
      out_.program.stream_labels[streams_[s]] = "stream " + std::to_string(s) + (s == compute ? " (compute)" : "");
    }
    return Ok{};
  }

  std::string describe() const {
    std::string d = fmt::format("replayed trace {} {}", trace_.path, trace_.step.empty() ? "(whole)" : trace_.step);
    if (trace_.rank >= 0) d += fmt::format(" (rank {} of {})", trace_.rank, trace_.world_size);
    d += fmt::format(": {} GPU ops at their measured durations on {} streams, {} host gaps ({:.3f} ms), {} waits ({}",
                     trace_.ops.size(), streams_.size(), host_gaps_, host_s_ * kMsPerS, waits_,
                     trace_.sync_events ? "CUDA sync events" : "matched from cudaStreamWaitEvent calls");
    if (trace_.contradicted_dependencies > 0) d += fmt::format(", {} contradicted and dropped", trace_.contradicted_dependencies);
    d += fmt::format("); {} NCCL collectives", collectives_);
    if (workload_.simulate_collectives) {
      d += fmt::format(", {} simulated", simulated_);
      for (const auto& [op, n] : kept_unmodelled_) d += fmt::format(", {} {} kept measured (not modelled)", n, op);
      if (kept_unsized_ > 0) d += fmt::format(", {} kept measured (no size in the trace)", kept_unsized_);
    } else {
      d += " at their measured durations";
    }
    return d + fmt::format("; measured iteration {:.3f} ms", trace_.iteration_s * kMsPerS);
  }

  const KinetoTrace& trace_;
  const TraceWorkload& workload_;
  TraceProgram out_;
  std::map<long, StreamId> streams_;
  std::map<std::string, GroupKind> kinds_;
  int host_gaps_ = 0;
  double host_s_ = 0;
  int waits_ = 0;
  int collectives_ = 0;
  int simulated_ = 0;
  int kept_unsized_ = 0;
  std::map<std::string, int> kept_unmodelled_;
};

}  // namespace

Expected<TraceProgram> build_trace_program(const KinetoTrace& trace, const TraceWorkload& workload) {
  return Builder(trace, workload).build();
}

Expected<TraceProgram> load_trace_program(const TraceWorkload& workload) {
  auto trace = read_kineto_trace(workload.path, workload.step);
  if (!trace) return Error{workload.origin + ": workload.trace: " + trace.error().message};
  return build_trace_program(*trace, workload);
}

}  // namespace commbound::sim
