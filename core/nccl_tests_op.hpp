// NcclTestsOp: the collectives of NVIDIA's nccl-tests that commbound reads, runs or models, with
// the conventions nccl-tests attaches to each: the binary that runs it (its logs carry that name)
// and the factor between the two bandwidths it prints (busbw = algbw x factor).
//
// Why here: the log reader and the fabric model (network/), the GPU bench that writes nccl-tests
// logs (kernels/, which never links SimGrid) and the reports all speak these conventions; they are
// written once, in the host-only base every room links, and each room maps its own op type onto
// this one. Host-only, C++17 (kernels/ includes it).
#pragma once

#include <optional>
#include <string_view>

namespace commbound {

enum class NcclTestsOp { all_gather, reduce_scatter, all_reduce, send_recv, all_to_all };

// The nccl-tests binary that runs `op`: "all_gather_perf", "reduce_scatter_perf",
// "all_reduce_perf", "sendrecv_perf", "alltoall_perf" (NVIDIA/nccl-tests, src/Makefile and
// src/<op>.cu). Its logs print it ("# Collective test starting: all_reduce_perf").
const char* nccl_tests_binary(NcclTestsOp op);

// The op an nccl-tests binary or a file name names, in any case, after the last '/': the op's
// words with or without their '_' ("all_gather_perf", "allgather", "all_to_all"), or its
// abbreviation as a word of its own ("s4_vp_4node_ag.txt", "run_rs.log", "h100_a2a.txt": ar, ag,
// rs, a2a). nullopt when none is named ("broadcast_perf", "s2a_309_2node.txt").
std::optional<NcclTestsOp> parse_nccl_tests_op(std::string_view name);

// nccl-tests' busbw / algbw for `op` on `ranks` ranks, algbw being size / time. The factor is the
// share of the buffer each rank must move through its links, so that busbw is comparable to the
// hardware's bandwidth whatever the op and the rank count (NVIDIA/nccl-tests, doc/PERFORMANCE.md):
//  - all_reduce 2(n-1)/n: src/all_reduce.cu, AllReduceGetBw (a ring moves each byte out and back in);
//  - all_gather, reduce_scatter (n-1)/n: src/all_gather.cu AllGatherGetBw, src/reduce_scatter.cu
//    ReduceScatterGetBw (the 1/n a rank holds itself does not cross a link);
//  - all_to_all (n-1)/n: src/alltoall.cu, AlltoAllGetBw (the size/n a rank keeps is not on the bus);
//  - send_recv 1: src/sendrecv.cu, SendRecvGetBw.
// 0 for a 1-rank all_reduce, all_gather, reduce_scatter or all_to_all: nothing crosses a link.
// `ranks` >= 1.
double bus_bw_factor(NcclTestsOp op, int ranks);

}  // namespace commbound
