#include "kernels/device/cuda_support.hpp"
#include "kernels/device/gemm.hpp"

#include <cublasLt.h>

#include <string>

namespace commbound::kernels {
namespace {

Status lt_check(cublasStatus_t code, const char* what) {
  if (code == CUBLAS_STATUS_SUCCESS) return Ok{};
  return Error{std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(code))};
}

}  // namespace

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLASLt computes an n x m
// result with "A" = our B and "B" = our A. A row-major matrix stored [r x c] is the column-major
// [c x r] matrix (its transpose), so an untransposed operand needs no cuBLAS transpose and a
// transposed one needs CUBLAS_OP_T.
struct GemmPlan::State {
  GemmShape shape;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layout_b = nullptr;  // our B, cuBLAS's first operand
  cublasLtMatrixLayout_t layout_a = nullptr;  // our A, cuBLAS's second operand
  cublasLtMatrixLayout_t layout_c = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic{};
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;

  ~State() {
    if (workspace != nullptr) cudaFree(workspace);
    if (preference != nullptr) cublasLtMatmulPreferenceDestroy(preference);
    if (layout_c != nullptr) cublasLtMatrixLayoutDestroy(layout_c);
    if (layout_a != nullptr) cublasLtMatrixLayoutDestroy(layout_a);
    if (layout_b != nullptr) cublasLtMatrixLayoutDestroy(layout_b);
    if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
    if (handle != nullptr) cublasLtDestroy(handle);
  }
};

GemmPlan::GemmPlan(std::unique_ptr<State> state) : state_(std::move(state)) {}
GemmPlan::~GemmPlan() = default;
GemmPlan::GemmPlan(GemmPlan&&) noexcept = default;
GemmPlan& GemmPlan::operator=(GemmPlan&&) noexcept = default;
const GemmShape& GemmPlan::shape() const { return state_->shape; }

Expected<GemmPlan> GemmPlan::create(const GemmShape& shape, std::size_t workspace_bytes) {
  auto st = std::make_unique<State>();
  st->shape = shape;
  const auto m = static_cast<std::uint64_t>(shape.m);
  const auto n = static_cast<std::uint64_t>(shape.n);
  const auto k = static_cast<std::uint64_t>(shape.k);
  if (Status s = lt_check(cublasLtCreate(&st->handle), "cublasLtCreate"); !s) return s.error();
  if (Status s = lt_check(cublasLtMatmulDescCreate(&st->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate"); !s) {
    return s.error();
  }
  const bool trans_a = a_transposed(shape.layout), trans_b = b_transposed(shape.layout);
  const cublasOperation_t op_first = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (Status s = lt_check(cublasLtMatmulDescSetAttribute(st->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_first,
                                                         sizeof op_first), "TRANSA"); !s) {
    return s.error();
  }
  if (Status s = lt_check(cublasLtMatmulDescSetAttribute(st->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_second,
                                                         sizeof op_second), "TRANSB"); !s) {
    return s.error();
  }
  // Column-major views: our B stored [k x n] is [n x k] (ld n); stored [n x k] (trans_b) is [k x n] (ld k).
  const std::uint64_t b_rows = trans_b ? k : n;
  const std::uint64_t b_cols = trans_b ? n : k;
  const std::uint64_t a_rows = trans_a ? m : k;
  const std::uint64_t a_cols = trans_a ? k : m;
  if (Status s = lt_check(cublasLtMatrixLayoutCreate(&st->layout_b, CUDA_R_16BF, b_rows, b_cols,
                                                     static_cast<int64_t>(b_rows)), "layout B"); !s) {
    return s.error();
  }
  if (Status s = lt_check(cublasLtMatrixLayoutCreate(&st->layout_a, CUDA_R_16BF, a_rows, a_cols,
                                                     static_cast<int64_t>(a_rows)), "layout A"); !s) {
    return s.error();
  }
  if (Status s = lt_check(cublasLtMatrixLayoutCreate(&st->layout_c, CUDA_R_16BF, n, m, static_cast<int64_t>(n)),
                          "layout C"); !s) {
    return s.error();
  }
  if (Status s = cuda_check(cudaMalloc(&st->workspace, workspace_bytes), "cudaMalloc workspace"); !s) return s.error();
  st->workspace_bytes = workspace_bytes;
  if (Status s = lt_check(cublasLtMatmulPreferenceCreate(&st->preference), "PreferenceCreate"); !s) return s.error();
  if (Status s = lt_check(cublasLtMatmulPreferenceSetAttribute(st->preference,
                                                               CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                               &workspace_bytes, sizeof workspace_bytes),
                          "workspace preference"); !s) {
    return s.error();
  }
  int found = 0;
  if (Status s = lt_check(cublasLtMatmulAlgoGetHeuristic(st->handle, st->desc, st->layout_b, st->layout_a,
                                                         st->layout_c, st->layout_c, st->preference, 1, &st->heuristic,
                                                         &found), "AlgoGetHeuristic"); !s) {
    return s.error();
  }
  if (found == 0) return Error{"cuBLASLt found no algorithm for this GEMM"};
  return Expected<GemmPlan>(GemmPlan(std::move(st)));
}

Status GemmPlan::run(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* c, cudaStream_t stream) const {
  const float alpha = 1.0f;
  const float beta = 0.0f;
  const State& st = *state_;
  return lt_check(cublasLtMatmul(st.handle, st.desc, &alpha, b, st.layout_b, a, st.layout_a, &beta, c, st.layout_c, c,
                                 st.layout_c, &st.heuristic.algo, st.workspace, st.workspace_bytes, stream),
                  "cublasLtMatmul");
}

}  // namespace commbound::kernels
