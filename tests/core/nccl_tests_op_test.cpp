// NcclTestsOp: nccl-tests' busbw factors worked by hand from what each collective moves, its
// binary names as nccl-tests' src/Makefile builds them, and those names (and file names) read back.
#include "core/nccl_tests_op.hpp"

#include <gtest/gtest.h>

#include <string>

namespace commbound {
namespace {

constexpr NcclTestsOp kAllOps[] = {NcclTestsOp::all_gather, NcclTestsOp::reduce_scatter, NcclTestsOp::all_reduce,
                                   NcclTestsOp::send_recv, NcclTestsOp::all_to_all};

struct Factor {
  NcclTestsOp op;
  int ranks;
  double expected;
};

// busbw / algbw = the bytes each rank moves over its links per byte of the buffer.
TEST(NcclTestsOp, BusBandwidthFactorsFromWhatEachRankMoves) {
  for (const Factor& c : {
           // A ring allreduce is a reduce-scatter then an allgather: each phase moves 7 of 8 blocks.
           Factor{NcclTestsOp::all_reduce, 8, 1.75},
           Factor{NcclTestsOp::all_reduce, 2, 1.0},
           Factor{NcclTestsOp::all_reduce, 16, 1.875},
           // An allgather on 8 ranks receives the 7 blocks it does not hold.
           Factor{NcclTestsOp::all_gather, 8, 0.875},
           Factor{NcclTestsOp::reduce_scatter, 16, 0.9375},
           Factor{NcclTestsOp::reduce_scatter, 4, 0.75},
           // An alltoall keeps 1 of its n slices: on 8 ranks 7/8 leaves, as nccl-tests counts it.
           Factor{NcclTestsOp::all_to_all, 8, 0.875},
           // A send/recv moves the whole message once, whatever the rank count.
           Factor{NcclTestsOp::send_recv, 2, 1.0},
           Factor{NcclTestsOp::send_recv, 8, 1.0},
       }) {
    EXPECT_DOUBLE_EQ(bus_bw_factor(c.op, c.ranks), c.expected) << nccl_tests_binary(c.op) << " on " << c.ranks;
  }
}

TEST(NcclTestsOp, OneRankMovesNothingButASendRecv) {
  for (NcclTestsOp op : kAllOps) {
    EXPECT_EQ(bus_bw_factor(op, 1), op == NcclTestsOp::send_recv ? 1.0 : 0.0) << nccl_tests_binary(op);
  }
}

TEST(NcclTestsOp, BinaryNamesAreNcclTests) {
  EXPECT_STREQ(nccl_tests_binary(NcclTestsOp::all_reduce), "all_reduce_perf");
  EXPECT_STREQ(nccl_tests_binary(NcclTestsOp::all_gather), "all_gather_perf");
  EXPECT_STREQ(nccl_tests_binary(NcclTestsOp::reduce_scatter), "reduce_scatter_perf");
  EXPECT_STREQ(nccl_tests_binary(NcclTestsOp::send_recv), "sendrecv_perf");
  EXPECT_STREQ(nccl_tests_binary(NcclTestsOp::all_to_all), "alltoall_perf");
}

TEST(NcclTestsOp, EachBinaryNameReadsBackAsItsOp) {
  for (NcclTestsOp op : kAllOps) {
    EXPECT_EQ(parse_nccl_tests_op(nccl_tests_binary(op)), op) << nccl_tests_binary(op);
    EXPECT_EQ(parse_nccl_tests_op(std::string("/opt/nccl-tests/build/") + nccl_tests_binary(op)), op);
  }
}

struct Named {
  const char* name;
  std::optional<NcclTestsOp> op;
};

TEST(NcclTestsOp, ReadsOpNamesAndFileNames) {
  for (const Named& c : {
           Named{"allreduce", NcclTestsOp::all_reduce},
           Named{"ALL_GATHER", NcclTestsOp::all_gather},
           Named{"reducescatter", NcclTestsOp::reduce_scatter},
           Named{"send_recv", NcclTestsOp::send_recv},
           Named{"all_to_all", NcclTestsOp::all_to_all},
           Named{"logs/s4_vp_4node_ag.txt", NcclTestsOp::all_gather},
           Named{"s1_dgxc_1node_ar.txt", NcclTestsOp::all_reduce},
           Named{"run_rs.log", NcclTestsOp::reduce_scatter},
           Named{"h100_a2a_2node.txt", NcclTestsOp::all_to_all},
           // Not an op of ours, or no op named: the letters must be a word of their own.
           Named{"broadcast_perf", std::nullopt},
           Named{"s2a_309_2node_qoofyk.txt", std::nullopt},
           Named{"start.log", std::nullopt},
           Named{"ag/run.log", std::nullopt},  // only the file name counts
           Named{"", std::nullopt},
       }) {
    EXPECT_EQ(parse_nccl_tests_op(c.name), c.op) << c.name;
  }
}

}  // namespace
}  // namespace commbound
