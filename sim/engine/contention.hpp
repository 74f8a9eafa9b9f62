// Contention: how much NCCL's kernels slow the compute that shares their GPU.
//
// A collective takes two things from compute while it runs: SMs (NCCL runs one CTA per channel,
// resident to the end) and HBM bandwidth (its data path reads and writes device memory at a
// multiple of its wire rate). A kernel beside it slows by
//   GEMM, attention:  1 + sm_cost x sm_share + hbm_cost x hbm_share,
// with the two costs of each kind solved from the calibration table's two [contention]
// measurements: a copy kernel on the same comm_sms SMs, once paced to comm_GBps and once unpaced,
// so the SM share is the same and only the HBM share differs. A table with the paced point only
// charges its whole slowdown to the SMs. Memory-bound kernels were not measured beside a copy:
// they stream at HBM's rate, so they are DERIVED to run on what the collective leaves of it,
//   memory-bound:     1 / (1 - hbm_share).
// A table whose [contention] lacks comm_sms (or sm_count) gives no shares to scale by: its factors
// apply flat while any collective runs (memory-bound kernels taking the GEMM's). Without a table:
// calibration/gpus.toml's comm_contention_factor, flat, for every kernel.
#pragma once

#include "model/kernel_shape.hpp"
#include "calibration/table/kernel_table.hpp"

#include <string>

namespace commbound::sim {

// What the collectives running on one GPU take from it, as fractions of the whole.
struct CommLoad {
  double sm_share = 0;   // of its SMs: NCCL's CTAs, one per channel
  double hbm_share = 0;  // of its achievable HBM traffic (the table's [device] copy rate)

  CommLoad& operator+=(const CommLoad& o) {
    sm_share += o.sm_share;
    hbm_share += o.hbm_share;
    return *this;
  }
  CommLoad& operator-=(const CommLoad& o) {
    sm_share -= o.sm_share;
    hbm_share -= o.hbm_share;
    return *this;
  }
};

// Device-memory bytes NCCL's data path moves per byte of bus traffic (a rank's busbw x time):
// a ring step with the Simple protocol has the peer write the chunk into this GPU's receive buffer,
// then reads it and writes it on (to the output, or reduced with a read of the local input): three
// local HBM transfers per byte received. DERIVED from NCCL's primitives (recvCopySend,
// recvReduceSend), not measured; Tree and NVLS move about as much.
inline constexpr double kNcclHbmBytesPerBusByte = 3;
// The HBM share past which a memory-bound kernel is taken to keep this much of the bandwidth (a
// collective cannot starve a kernel entirely: the memory controllers serve both).
inline constexpr double kMaxCommHbmShare = 0.9;

class Contention {
public:
  // No table: the flat factor while any collective runs (calibration/gpus.toml).
  explicit Contention(double flat_factor = 1);
  // From `table`'s [contention], [provenance] sm_count and [device] copy rate; flat where it
  // lacks the shares (see above), and `flat_factor` where it lacks [contention].
  Contention(const calibration::KernelTable& table, double flat_factor);

  // What a collective's kernel holds while it runs: its CTAs, one per NCCL channel (without a
  // table: one whole load, which the flat factor prices).
  CommLoad sm_load(int channels) const;
  // What its data path takes while bytes move: `bus_bytes_per_s` of bus traffic on this GPU (its
  // bus bytes over its duration) through HBM (none without a table).
  CommLoad hbm_load(double bus_bytes_per_s) const;
  // The factor by which `kernel` runs slower under `load` (1 when nothing runs beside it).
  double slowdown(const model::KernelShape& kernel, const CommLoad& load) const;
  std::string describe() const;

private:
  struct Costs {
    double sm_cost = 0;   // slowdown per unit of SM share
    double hbm_cost = 0;  // slowdown per unit of HBM share
  };
  double flat_gemm_ = 1, flat_attention_ = 1;
  bool measured_ = false;
  double sm_count_ = 0;
  double hbm_bytes_per_s_ = 0;
  Costs gemm_, attention_;
  bool hbm_split_ = false;  // the unpaced point was there to split SMs from HBM
};

}  // namespace commbound::sim
