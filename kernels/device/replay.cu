#include "kernels/device/replay.hpp"

#include "core/check.hpp"
#include "kernels/device/attention.hpp"
#include "kernels/device/elementwise.hpp"
#include "kernels/device/gemm.hpp"
#include "kernels/device/random_fill.hpp"

#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <type_traits>
#include <variant>

namespace commbound::kernels {
namespace {

using model::Direction;
using model::KernelShape;
using model::LlamaRecipe;
using model::RecipeKernel;

using u16 = std::uint16_t;
constexpr float kEps = 1e-5f;  // RMSNorm epsilon: Llama-2's rms_norm_eps (its config.json)

// Device memory of the replay, owned in one place and freed together.
class Arena {
public:
  Expected<u16*> bf16(std::size_t count, bool random = true) {
    auto p = raw(2 * count);
    if (!p) return p.error();
    if (random) {
      if (Status s = fill_random_bf16(static_cast<u16*>(*p), count, seed_++, 1.0f); !s) return s.error();
    }
    return static_cast<u16*>(*p);
  }
  Expected<float*> f32(std::size_t count, bool non_negative = false) {
    auto p = raw(4 * count);
    if (!p) return p.error();
    if (Status s = fill_random_f32(static_cast<float*>(*p), count, seed_++, non_negative ? 1e-3f : 1.0f, non_negative);
        !s) {
      return s.error();
    }
    return static_cast<float*>(*p);
  }
  Expected<std::int32_t*> ids(std::size_t count, std::int32_t bound) {
    auto p = raw(4 * count);
    if (!p) return p.error();
    if (Status s = fill_random_ids(static_cast<std::int32_t*>(*p), count, seed_++, bound); !s) return s.error();
    return static_cast<std::int32_t*>(*p);
  }
  Expected<void*> raw(std::size_t bytes) {
    auto b = DeviceBuffer<char>::create(std::max<std::size_t>(bytes, 16));
    if (!b) return b.error();
    void* p = b->get();
    owned_.push_back(std::move(*b));
    return p;
  }

private:
  std::vector<DeviceBuffer<char>> owned_;
  std::uint64_t seed_ = 5000;
};

// One op of the sequence: its launch on the replay's buffers and the shape that prices it.
struct Step {
  std::string name;
  std::function<Status()> launch;
  KernelShape shape;
};

// A GEMM's operands: C = op(A) op(B) in its layout (kernels/host/reference.hpp).
struct Operands {
  const u16* a;
  const u16* b;
  u16* c;
};

// Builds the kernel sequence; buffers live in `arena`, GEMM plans in `plans`.
class SequenceBuilder {
public:
  SequenceBuilder(const ReplayOptions& o, Arena& arena) : o_(o), arena_(arena) {}

  Expected<std::vector<Step>> build();
  double parameters() const { return parameters_; }

private:
  struct Layer {
    u16 *w_qkv, *w_o, *w_gu, *w_down, *norm1_w, *norm2_w;
    u16 *dw_qkv, *dw_o, *dw_gu, *dw_down;
    float *dnorm1_w, *dnorm2_w;
    u16 *x_in, *n1, *qkv_out, *q, *k, *v, *o, *attn_proj, *h1, *n2, *gu, *gate, *up, *act, *mlp_out, *x_out;
    float* lse;
  };
  struct Scratch {
    u16 *dx, *d_act, *dgate, *dup, *dgu, *dn2, *dh1b, *dh1, *d_o, *dq, *dk, *dv, *dqkv, *dn1, *dx_in;
    void* attention_workspace;
    float* rope_table;
  };

  // Appends the recipe's kernels `kernels` as steps named `name_of(kernel)`: a GEMM on the operands
  // `gemms` gives its name, any other kernel by the launch `launches` gives its name. The recipe
  // and the replay's buffers must agree on the names (an always-on check).
  template <class NameOf>
  Status append(const std::vector<RecipeKernel>& kernels, NameOf name_of, const std::map<std::string, Operands>& gemms,
                const std::map<std::string, std::function<Status()>>& launches) {
    for (const RecipeKernel& k : kernels) {
      COMMBOUND_CHECK(k.runs == 1, "the replay runs one GPU: a recipe kernel with context-parallel blocks");
      Step s;
      s.name = name_of(k);
      s.shape = k.shape;
      if (const auto* g = std::get_if<model::GemmShape>(&k.shape)) {
        const auto it = gemms.find(k.name);
        COMMBOUND_CHECK(it != gemms.end(), "a recipe GEMM the replay has no operands for");
        auto plan = GemmPlan::create(*g, std::size_t{32} << 20);
        if (!plan) return plan.error();
        plans_.push_back(std::make_shared<GemmPlan>(std::move(*plan)));
        const std::shared_ptr<GemmPlan> p = plans_.back();
        const Operands op = it->second;
        s.launch = [p, op] { return p->run(op.a, op.b, op.c); };
      } else {
        const auto it = launches.find(k.name);
        COMMBOUND_CHECK(it != launches.end(), "a recipe kernel the replay cannot launch");
        s.launch = it->second;
      }
      steps_.push_back(std::move(s));
    }
    return Ok{};
  }
  Status forward(const std::string& p, const Layer& L, const Scratch& S);
  Status backward(const std::string& p, const Layer& L, const Scratch& S, const u16* dx_out, u16* dx_in);
  std::function<std::string(const RecipeKernel&)> prefixed(const std::string& prefix) const {
    return [prefix](const RecipeKernel& k) { return prefix + k.name; };
  }

  const ReplayOptions& o_;
  Arena& arena_;
  std::vector<Step> steps_;
  std::vector<std::shared_ptr<GemmPlan>> plans_;
  double parameters_ = 0;
  LlamaRecipe recipe_{{}, {}};
  // Buffer sizes, set by build().
  std::int64_t T_ = 0, h_ = 0, qkv_ = 0, hq_ = 0, hkv_ = 0, ffn_ = 0, vocab_ = 0;
  AttentionShape attn_{};  // the recipe's attention (forward)
  RopeShape rope_{};
};

#define COMMBOUND_TRY_ASSIGN(var, expr) \
  do {                                  \
    auto r_ = (expr);                   \
    if (!r_) return r_.error();         \
    (var) = *r_;                        \
  } while (false)

Status SequenceBuilder::forward(const std::string& p, const Layer& L, const Scratch& S) {
  const std::size_t T = static_cast<std::size_t>(T_), h = static_cast<std::size_t>(h_);
  const std::size_t ffn = static_cast<std::size_t>(ffn_);
  const AttentionShape attn = attn_;
  const RopeShape rope = rope_;
  const std::map<std::string, Operands> gemms = {{"qkv", {L.n1, L.w_qkv, L.qkv_out}},
                                                 {"o_proj", {L.o, L.w_o, L.attn_proj}},
                                                 {"gate_up", {L.n2, L.w_gu, L.gu}},
                                                 {"down", {L.act, L.w_down, L.mlp_out}}};
  const std::map<std::string, std::function<Status()>> launches = {
      {"rmsnorm", [=] { return rmsnorm_forward(L.x_in, L.norm1_w, T, h, kEps, L.n1); }},
      {"rope", [=] { return rope_forward(L.q, L.k, S.rope_table, rope); }},
      {"attention", [=] { return attention_forward(attn, L.q, L.k, L.v, L.o, L.lse); }},
      {"residual", [=] { return residual_add(L.x_in, L.attn_proj, T * h, L.h1); }},
      {"rmsnorm2", [=] { return rmsnorm_forward(L.h1, L.norm2_w, T, h, kEps, L.n2); }},
      {"swiglu", [=] { return swiglu_forward(L.gate, L.up, T * ffn, L.act); }},
      {"residual2", [=] { return residual_add(L.h1, L.mlp_out, T * h, L.x_out); }}};
  return append(recipe_.layer(Direction::forward), prefixed(p), gemms, launches);
}

// The recipe's backward adds the skip path's gradient after each norm's backward: residual2 makes
// dh1 = dx_out + dh1b (the MLP branch's gradient at h1), residual makes dx_in = dh1 + the attention
// branch's gradient at x_in (written into dh1b, free again once residual2 has read it).
Status SequenceBuilder::backward(const std::string& p, const Layer& L, const Scratch& S, const u16* dx_out,
                                 u16* dx_in) {
  const std::size_t T = static_cast<std::size_t>(T_), h = static_cast<std::size_t>(h_);
  const std::size_t ffn = static_cast<std::size_t>(ffn_);
  AttentionShape attn = attn_;
  attn.direction = Direction::backward;
  const RopeShape rope = rope_;
  const std::map<std::string, Operands> gemms = {
      {"down.dgrad", {dx_out, L.w_down, S.d_act}},  {"down.wgrad", {dx_out, L.act, L.dw_down}},
      {"gate_up.dgrad", {S.dgu, L.w_gu, S.dn2}},    {"gate_up.wgrad", {S.dgu, L.n2, L.dw_gu}},
      {"o_proj.dgrad", {S.dh1, L.w_o, S.d_o}},      {"o_proj.wgrad", {S.dh1, L.o, L.dw_o}},
      {"qkv.dgrad", {S.dqkv, L.w_qkv, S.dn1}},      {"qkv.wgrad", {S.dqkv, L.n1, L.dw_qkv}}};
  const std::map<std::string, std::function<Status()>> launches = {
      {"residual2", [=] { return residual_add(dx_out, S.dh1b, T * h, S.dh1); }},
      {"swiglu", [=] { return swiglu_backward(S.d_act, L.gate, L.up, T * ffn, S.dgate, S.dup); }},
      {"rmsnorm2", [=] { return rmsnorm_backward(S.dn2, L.h1, L.norm2_w, T, h, kEps, S.dh1b, L.dnorm2_w); }},
      {"attention",
       [=] {
         return attention_backward(attn, L.q, L.k, L.v, L.o, S.d_o, L.lse, S.dq, S.dk, S.dv, S.attention_workspace);
       }},
      {"rope", [=] { return rope_backward(S.dq, S.dk, S.rope_table, rope); }},
      {"rmsnorm", [=] { return rmsnorm_backward(S.dn1, L.x_in, L.norm1_w, T, h, kEps, S.dh1b, L.dnorm1_w); }},
      {"residual", [=] { return residual_add(S.dh1, S.dh1b, T * h, dx_in); }}};
  return append(recipe_.layer(Direction::backward), prefixed(p), gemms, launches);
}

Expected<std::vector<Step>> SequenceBuilder::build() {
  const model::ModelSpec& m = o_.model;
  const model::StepLayout& st = o_.step;
  recipe_ = LlamaRecipe(m, st);
  const int tp = st.tp;
  const int d = m.head_dim();
  T_ = static_cast<std::int64_t>(st.tokens());
  h_ = m.hidden;
  hq_ = static_cast<std::int64_t>(m.heads / tp) * d;
  hkv_ = static_cast<std::int64_t>(m.kv_heads / tp) * d;
  qkv_ = hq_ + 2 * hkv_;
  ffn_ = m.ffn / tp;
  vocab_ = m.vocab / tp;
  for (const RecipeKernel& k : recipe_.layer(Direction::forward)) {
    if (const auto* a = std::get_if<AttentionShape>(&k.shape)) attn_ = *a;
  }
  rope_ = {static_cast<std::size_t>(T_), static_cast<std::size_t>(st.seq), static_cast<std::size_t>(m.heads / tp),
           static_cast<std::size_t>(m.kv_heads / tp), static_cast<std::size_t>(d)};
  const int layers = o_.replayed_layers();
  const auto T = static_cast<std::size_t>(T_), h = static_cast<std::size_t>(h_);
  const auto ffn = static_cast<std::size_t>(ffn_), qkv = static_cast<std::size_t>(qkv_);
  const auto hq = static_cast<std::size_t>(hq_), hkv = static_cast<std::size_t>(hkv_);

  Scratch S{};
  for (u16** b : {&S.dx, &S.dh1b, &S.dh1, &S.dn2, &S.dn1, &S.dx_in}) COMMBOUND_TRY_ASSIGN(*b, arena_.bf16(T * h));
  for (u16** b : {&S.d_act, &S.dgate, &S.dup}) COMMBOUND_TRY_ASSIGN(*b, arena_.bf16(T * ffn));
  COMMBOUND_TRY_ASSIGN(S.dgu, arena_.bf16(2 * T * ffn));
  for (u16** b : {&S.d_o, &S.dq}) COMMBOUND_TRY_ASSIGN(*b, arena_.bf16(T * hq));
  for (u16** b : {&S.dk, &S.dv}) COMMBOUND_TRY_ASSIGN(*b, arena_.bf16(T * hkv));
  COMMBOUND_TRY_ASSIGN(S.dqkv, arena_.bf16(T * qkv));
  COMMBOUND_TRY_ASSIGN(S.attention_workspace, arena_.raw(attention_backward_workspace_bytes(attn_)));
  {
    const std::vector<float> table = rope_table(rope_.seq, rope_.head_dim);
    COMMBOUND_TRY_ASSIGN(S.rope_table, arena_.f32(table.size()));
    if (Status s = cuda_check(cudaMemcpy(S.rope_table, table.data(), 4 * table.size(), cudaMemcpyHostToDevice),
                              "rope table upload");
        !s) {
      return s.error();
    }
  }

  std::vector<Layer> ls(static_cast<std::size_t>(layers));
  u16* x = nullptr;
  COMMBOUND_TRY_ASSIGN(x, arena_.bf16(T * h));  // the first layer's input
  for (Layer& L : ls) {
    COMMBOUND_TRY_ASSIGN(L.w_qkv, arena_.bf16(qkv * h));
    COMMBOUND_TRY_ASSIGN(L.w_o, arena_.bf16(h * hq));
    COMMBOUND_TRY_ASSIGN(L.w_gu, arena_.bf16(2 * ffn * h));
    COMMBOUND_TRY_ASSIGN(L.w_down, arena_.bf16(h * ffn));
    COMMBOUND_TRY_ASSIGN(L.norm1_w, arena_.bf16(h));
    COMMBOUND_TRY_ASSIGN(L.norm2_w, arena_.bf16(h));
    COMMBOUND_TRY_ASSIGN(L.dw_qkv, arena_.bf16(qkv * h, false));
    COMMBOUND_TRY_ASSIGN(L.dw_o, arena_.bf16(h * hq, false));
    COMMBOUND_TRY_ASSIGN(L.dw_gu, arena_.bf16(2 * ffn * h, false));
    COMMBOUND_TRY_ASSIGN(L.dw_down, arena_.bf16(h * ffn, false));
    COMMBOUND_TRY_ASSIGN(L.dnorm1_w, arena_.f32(h));
    COMMBOUND_TRY_ASSIGN(L.dnorm2_w, arena_.f32(h));
    L.x_in = x;
    for (u16** b : {&L.n1, &L.attn_proj, &L.h1, &L.n2, &L.mlp_out, &L.x_out}) {
      COMMBOUND_TRY_ASSIGN(*b, arena_.bf16(T * h, false));
    }
    COMMBOUND_TRY_ASSIGN(L.qkv_out, arena_.bf16(T * qkv, false));
    COMMBOUND_TRY_ASSIGN(L.q, arena_.bf16(T * hq));
    COMMBOUND_TRY_ASSIGN(L.k, arena_.bf16(T * hkv));
    COMMBOUND_TRY_ASSIGN(L.v, arena_.bf16(T * hkv));
    COMMBOUND_TRY_ASSIGN(L.o, arena_.bf16(T * hq, false));
    COMMBOUND_TRY_ASSIGN(L.gu, arena_.bf16(2 * T * ffn, false));
    COMMBOUND_TRY_ASSIGN(L.gate, arena_.bf16(T * ffn));
    COMMBOUND_TRY_ASSIGN(L.up, arena_.bf16(T * ffn));
    COMMBOUND_TRY_ASSIGN(L.act, arena_.bf16(T * ffn, false));
    COMMBOUND_TRY_ASSIGN(L.lse, arena_.f32(static_cast<std::size_t>(attn_.batch * attn_.heads * attn_.seq)));
    x = L.x_out;
  }

  // Forward: embedding, layers, final norm, LM head, loss.
  std::int32_t* ids = nullptr;
  std::int32_t* targets = nullptr;
  u16 *embedding = nullptr, *final_w = nullptr, *nf = nullptr, *w_head = nullptr, *logits = nullptr;
  u16 *dlogits = nullptr, *dnf = nullptr, *dw_head = nullptr;
  float *loss = nullptr, *lse_ce = nullptr, *dembedding = nullptr, *dfinal_w = nullptr;
  const auto V = static_cast<std::size_t>(vocab_);
  if (o_.full_model) {
    COMMBOUND_TRY_ASSIGN(ids, arena_.ids(T, m.vocab));
    COMMBOUND_TRY_ASSIGN(targets, arena_.ids(T, static_cast<std::int32_t>(V)));
    COMMBOUND_TRY_ASSIGN(embedding, arena_.bf16(static_cast<std::size_t>(m.vocab) * h));
    COMMBOUND_TRY_ASSIGN(final_w, arena_.bf16(h));
    COMMBOUND_TRY_ASSIGN(nf, arena_.bf16(T * h, false));
    COMMBOUND_TRY_ASSIGN(w_head, arena_.bf16(V * h));
    COMMBOUND_TRY_ASSIGN(logits, arena_.bf16(T * V, false));
    COMMBOUND_TRY_ASSIGN(dlogits, arena_.bf16(T * V, false));
    COMMBOUND_TRY_ASSIGN(dnf, arena_.bf16(T * h, false));
    COMMBOUND_TRY_ASSIGN(dw_head, arena_.bf16(V * h, false));
    COMMBOUND_TRY_ASSIGN(loss, arena_.f32(T));
    COMMBOUND_TRY_ASSIGN(lse_ce, arena_.f32(T));
    COMMBOUND_TRY_ASSIGN(dembedding, arena_.f32(static_cast<std::size_t>(m.vocab) * h));
    COMMBOUND_TRY_ASSIGN(dfinal_w, arena_.f32(h));
    u16* x0 = ls.front().x_in;
    const auto vocab_full = static_cast<std::size_t>(m.vocab);
    const std::map<std::string, std::function<Status()>> launches = {
        {"embedding", [=] { return embedding_forward(ids, embedding, T, vocab_full, h, x0); }}};
    if (Status s = append(recipe_.embedding(Direction::forward), [](const RecipeKernel&) { return std::string("embedding.fwd"); },
                          {}, launches);
        !s) {
      return s.error();
    }
  }
  for (std::size_t l = 0; l < ls.size(); ++l) {
    if (Status s = forward("layer" + std::to_string(l) + ".fwd.", ls[l], S); !s) return s.error();
  }
  const u16* dx_top = S.dx;  // the gradient arriving at the last layer's output
  if (o_.full_model) {
    const u16* xl = ls.back().x_out;
    u16* dx = S.dx;
    const std::map<std::string, Operands> gemms = {{"logits", {nf, w_head, logits}},
                                                   {"logits.dgrad", {dlogits, w_head, dnf}},
                                                   {"logits.wgrad", {dlogits, nf, dw_head}}};
    const std::map<std::string, std::function<Status()>> forward_launches = {
        {"rmsnorm_final", [=] { return rmsnorm_forward(xl, final_w, T, h, kEps, nf); }},
        {"cross_entropy", [=] { return cross_entropy_forward(logits, targets, T, V, loss, lse_ce); }}};
    const std::map<std::string, std::function<Status()>> backward_launches = {
        {"cross_entropy",
         [=] { return cross_entropy_backward(logits, targets, lse_ce, T, V, 1.0f / static_cast<float>(T), dlogits); }},
        {"rmsnorm_final", [=] { return rmsnorm_backward(dnf, xl, final_w, T, h, kEps, dx, dfinal_w); }}};
    if (Status s = append(recipe_.lm_head(Direction::forward), prefixed("lm_head.fwd."), gemms, forward_launches); !s) {
      return s.error();
    }
    if (Status s = append(recipe_.lm_head(Direction::backward), prefixed("lm_head.bwd."), gemms, backward_launches);
        !s) {
      return s.error();
    }
  }
  // Backward, last layer first; the gradient ping-pongs between two buffers.
  u16* grads[2] = {S.dx, S.dx_in};
  const u16* dx_out = dx_top;
  for (std::size_t i = ls.size(); i-- > 0;) {
    u16* dx_in = grads[(ls.size() - i) % 2];
    if (Status s = backward("layer" + std::to_string(i) + ".bwd.", ls[i], S, dx_out, dx_in); !s) return s.error();
    dx_out = dx_in;
  }
  if (o_.full_model) {
    const auto vocab_full = static_cast<std::size_t>(m.vocab);
    const std::map<std::string, std::function<Status()>> embedding_launches = {
        {"embedding", [=] { return embedding_backward(dx_out, ids, T, vocab_full, h, dembedding); }}};
    if (Status s = append(recipe_.embedding(Direction::backward),
                          [](const RecipeKernel&) { return std::string("embedding.bwd"); }, {}, embedding_launches);
        !s) {
      return s.error();
    }
    // The optimizer over every parameter of the replayed model (fp32 master weights, gradients,
    // moments; the bf16 copy the next forward reads), rounded up to AdamW's multiple of 4.
    model::ModelSpec replayed = m;
    replayed.layers = layers;
    parameters_ = replayed.params();
    const std::size_t P = (static_cast<std::size_t>(parameters_) + 3) / 4 * 4;
    float *param = nullptr, *grad = nullptr, *mom = nullptr, *var = nullptr;
    u16* param_bf16 = nullptr;
    void *partials = nullptr, *sum_sq = nullptr;
    COMMBOUND_TRY_ASSIGN(param, arena_.f32(P));
    COMMBOUND_TRY_ASSIGN(grad, arena_.f32(P));
    COMMBOUND_TRY_ASSIGN(mom, arena_.f32(P));
    COMMBOUND_TRY_ASSIGN(var, arena_.f32(P, true));
    COMMBOUND_TRY_ASSIGN(param_bf16, arena_.bf16(P, false));
    COMMBOUND_TRY_ASSIGN(partials, arena_.raw(8 * kGradNormPartials));
    COMMBOUND_TRY_ASSIGN(sum_sq, arena_.raw(8));
    const std::map<std::string, std::function<Status()>> optimizer_launches = {
        {"grad_norm",
         [=] { return grad_norm_squared(grad, P, static_cast<double*>(partials), static_cast<double*>(sum_sq)); }},
        {"adamw", [=] { return adamw_step(param, grad, mom, var, param_bf16, P, AdamWParams{}); }}};
    if (Status s = append(LlamaRecipe::optimizer(static_cast<double>(P)), prefixed("optimizer."), {},
                          optimizer_launches);
        !s) {
      return s.error();
    }
  }
  if (Status s = cuda_check(cudaDeviceSynchronize(), "replay buffers"); !s) return s.error();
  return std::move(steps_);
}

}  // namespace

Expected<ReplayResult> replay(Calibrator& calibrator, const ReplayOptions& options) {
  ReplayResult result;
  std::vector<Step> steps;
  {
    Arena arena;
    SequenceBuilder builder(options, arena);
    auto built = builder.build();
    if (!built) return built.error();
    steps = std::move(*built);
    result.parameters = builder.parameters();
    TimingOptions t;
    t.warmup_runs = 1;
    t.timed_runs = std::max(1, options.runs);
    auto timing = time_kernel(
        [&](int) -> Status {
          for (const Step& s : steps) {
            if (Status st = s.launch(); !st) return Error{s.name + ": " + st.error().message};
          }
          return Ok{};
        },
        t);
    if (!timing) return timing.error();
    result.replay = *timing;
  }  // the replay's buffers are freed before the ops are timed one by one
  std::map<std::string, double> isolated;  // by calibration row: repeated layers share a shape
  for (Step& s : steps) {
    const std::string key = model::describe(s.shape);
    if (isolated.find(key) == isolated.end()) {
      const Expected<Percentiles> t =
          std::visit([&](const auto& shape) -> Expected<Percentiles> {
            using Shape = std::decay_t<decltype(shape)>;
            if constexpr (std::is_same_v<Shape, std::monostate>) {
              return Error{"a step without a kernel"};
            } else if constexpr (std::is_same_v<Shape, model::ElementwiseShape>) {
              return Error{"a framework's elementwise kernel: commbound has no kernel of it to time"};
            } else {
              return calibrator.measure(shape);
            }
          }, s.shape);
      if (!t) return Error{key + ": " + t.error().message};
      isolated[key] = t->p50_ms;
    }
    result.ops.push_back({s.name, s.shape, isolated[key]});
    result.sum_isolated_ms += isolated[key];
  }
  return result;
}

TablePricing price_with_table(const ReplayResult& result, const calibration::KernelTable& table) {
  TablePricing pricing;
  for (const ReplayOpTime& op : result.ops) {
    const calibration::Priced p = table.price(op.kernel, "commbound");
    pricing.sum_ms += p.seconds * 1e3;
    switch (p.match) {
      case calibration::Match::exact: ++pricing.exact; break;
      case calibration::Match::nearest: ++pricing.nearest; break;
      case calibration::Match::roofline: ++pricing.roofline; break;
    }
  }
  return pricing;
}

std::string format_replay(const ReplayOptions& o, const ReplayResult& r) {
  std::ostringstream out;
  char line[256];
  const int layers = o.replayed_layers();
  std::snprintf(line, sizeof line,
                "replay: %s, %d layer%s%s, micro-batch %d x seq %d (%lld tokens), tp %d: %zu kernels, forward + "
                "backward%s\n\n",
                o.model.name.c_str(), layers, layers == 1 ? "" : "s", o.full_model ? " + embedding, LM head, loss" : "",
                o.step.micro_batch, o.step.seq, static_cast<long long>(o.step.tokens()), o.step.tp, r.ops.size(),
                o.full_model ? ", gradient norm and AdamW" : "");
  out << line;
  // Per op of a layer (layer index dropped), in first-seen order: count, summed isolated time and
  // the kernel of its first occurrence.
  struct Group {
    std::string name;
    int count = 0;
    double isolated_ms = 0;
    std::string kernel;
  };
  std::vector<Group> groups;
  std::map<std::string, std::size_t> index;
  for (const ReplayOpTime& op : r.ops) {
    std::string name = op.name;
    if (name.rfind("layer", 0) == 0) name = "layer*" + name.substr(name.find('.'));
    const auto [it, added] = index.emplace(name, groups.size());
    if (added) groups.push_back({name, 0, 0, model::describe(op.kernel)});
    Group& g = groups[it->second];
    g.count += 1;
    g.isolated_ms += op.isolated_ms;
  }
  std::snprintf(line, sizeof line, "%-34s %5s %12s  %s\n", "op", "count", "isolated ms", "kernel (one of them)");
  out << line;
  for (const Group& g : groups) {
    std::snprintf(line, sizeof line, "%-34s %5d %12.4f  %s\n", g.name.c_str(), g.count, g.isolated_ms, g.kernel.c_str());
    out << line;
  }
  const double error = r.sum_isolated_ms / r.replay.p50_ms - 1;
  std::snprintf(line, sizeof line,
                "\nreplayed back to back: %.3f ms (p10 %.3f, p90 %.3f)\nsum of ops timed alone: %.3f ms\n"
                "pricing op by op is off by %+.1f%% (sum / replay - 1)\n",
                r.replay.p50_ms, r.replay.p10_ms, r.replay.p90_ms, r.sum_isolated_ms, 100 * error);
  out << line;
  return out.str();
}

}  // namespace commbound::kernels
