// memory_bound_min_bytes against byte counts worked out by hand, and the table names.
#include "model/memory_bound_op.hpp"

#include <gtest/gtest.h>

#include <string>

namespace commbound::model {
namespace {

struct BytesCase {
  MemoryBoundOp op;
  std::size_t tokens, width, bytes;
};

// T = 2 tokens, W = 8 unless said: a bf16 [T x W] tensor is 32 B; fp32 and int32 values 4 B.
TEST(MemoryBoundOp, MinBytesByHand) {
  const BytesCase cases[] = {
      // x read and y written: 2 * 32 B; w read 8 * 2 B.
      {MemoryBoundOp::rmsnorm_forward, 2, 8, 64 + 16},
      // Llama-7B, docs/calibration.md's example row: 4 * 8192 * 4096 + 2 * 4096.
      {MemoryBoundOp::rmsnorm_forward, 8192, 4096, 134225920},
      // dy, x read, dx written: 3 * 32 B; w read 16 B; dw fp32 read and written 2 * 32 B.
      {MemoryBoundOp::rmsnorm_backward, 2, 8, 96 + 16 + 64},
      // q and k read and written in place: 2 * 32 B; each token's cos/sin row: 64 pairs of 8 B.
      {MemoryBoundOp::rope_forward, 2, 8, 64 + 2 * 512},
      {MemoryBoundOp::rope_backward, 2, 8, 64 + 2 * 512},
      {MemoryBoundOp::swiglu_forward, 2, 8, 3 * 32},
      {MemoryBoundOp::swiglu_backward, 2, 8, 5 * 32},
      {MemoryBoundOp::residual_add, 2, 8, 3 * 32},
      // ids 2 * 4 B; a gathered row and a written row a token: 2 * 32 B.
      {MemoryBoundOp::embedding_forward, 2, 8, 8 + 64},
      // ids 8 B, dout 32 B, fp32 rows read and written 2 * 64 B.
      {MemoryBoundOp::embedding_backward, 2, 8, 8 + 32 + 128},
      // bf16 logits 32 B; targets, loss, lse 3 * 8 B.
      {MemoryBoundOp::cross_entropy_forward, 2, 8, 32 + 24},
      // logits read, dlogits written 2 * 32 B; targets, lse 2 * 8 B.
      {MemoryBoundOp::cross_entropy_backward, 2, 8, 64 + 16},
      // 256M parameters: 16 B read and 12 + 2 B written each.
      {MemoryBoundOp::adamw, 1, std::size_t{1} << 28, std::size_t{30} << 28},
      {MemoryBoundOp::grad_norm, 1, std::size_t{1} << 28, std::size_t{4} << 28},
  };
  for (const BytesCase& c : cases) {
    EXPECT_EQ(memory_bound_min_bytes(c.op, c.tokens, c.width), c.bytes) << to_string(c.op);
  }
}

TEST(MemoryBoundOp, NamesAreTheCalibrationTables) {
  EXPECT_EQ(std::string(to_string(MemoryBoundOp::rmsnorm_forward)), "rmsnorm_forward");
  EXPECT_EQ(std::string(to_string(MemoryBoundOp::rope_backward)), "rope_backward");
  EXPECT_EQ(std::string(to_string(MemoryBoundOp::embedding_backward)), "embedding_backward");
  EXPECT_EQ(std::string(to_string(MemoryBoundOp::cross_entropy_forward)), "cross_entropy_forward");
  EXPECT_EQ(std::string(to_string(MemoryBoundOp::adamw)), "adamw");
  EXPECT_EQ(std::string(to_string(MemoryBoundOp::grad_norm)), "grad_norm");
}

}  // namespace
}  // namespace commbound::model
