// TrainPlan: a scenario's [train] section, what `commbound train` projects a whole run with: the
// tokens to train, the failures that interrupt it, and what a checkpoint and a restart cost.
//
// Default rates come from the one public census of a run at this scale: the Llama 3 paper
// (arXiv 2407.21783, section 3.3.4, Table 5): 466 job interruptions in a 54-day snapshot of
// pre-training on up to 16,384 H100 GPUs in 2,048 nodes, 47 planned and 419 unexpected; of these,
// faulty GPUs 148, GPU HBM3 memory 72, GPU SRAM memory 19, GPU system processor 17 (256 of a GPU),
// network switch and cable 35, the other 128 (software, host maintenance, NIC, storage, power,
// ...); docs/reference/interruptions.md holds the census with its sources. Per component-hour
// over the snapshot's 54 x 24 = 1296 hours:
//   a GPU's 256 over 16,384 GPUs                    256 / (1296 h x 16384) = 1.206e-5 per GPU-hour
//   a node's 35 + 128 + 47 planned over 2,048 nodes 210 / (1296 h x 2048)  = 7.912e-5 per node-hour
// With these defaults that run's interruption count is an input of the model, not a check of it.
#pragma once

namespace commbound::sim {

// Llama 3 paper, Table 5 and section 3.3.4 (above).
inline constexpr double kLlama3SnapshotHours = 54 * 24;
inline constexpr double kLlama3Gpus = 16384;
inline constexpr double kLlama3Nodes = 2048;
inline constexpr double kLlama3GpuInterruptions = 148 + 72 + 19 + 17;
inline constexpr double kLlama3NodeInterruptions = 35 + 128 + 47;
inline constexpr double kLlama3GpuFailuresPerGpuHour = kLlama3GpuInterruptions / (kLlama3SnapshotHours * kLlama3Gpus);
inline constexpr double kLlama3NodeFailuresPerNodeHour =
    kLlama3NodeInterruptions / (kLlama3SnapshotHours * kLlama3Nodes);
// Meta's Tectonic file system behind Llama 3's checkpoints: 2 TB/s sustained (7 TB/s peak), the
// same section of the paper.
inline constexpr double kLlama3StorageBytesPerS = 2e12;
// A checkpoint of mixed-precision AdamW: bf16 weights (2 bytes) + fp32 master weights (4) + two
// fp32 moments (8) per parameter. DERIVED from what the optimizer holds, not measured.
inline constexpr double kCheckpointBytesPerParameter = 14;
// Rescheduling the job, initialising NCCL and the data loader and reaching full speed again after
// an interruption: no public figure at this scale was found; 10 minutes is a GUESS, said so in
// every report that uses it (a scenario sets [train] restart_s).
inline constexpr double kRestartGuessS = 600;

struct TrainPlan {
  double tokens = 0;                      // to train; 0: unset (commbound train --tokens)
  double checkpoint_interval_s = 0;       // of training between checkpoints; 0: Daly's optimum
  double storage_bytes_per_s = kLlama3StorageBytesPerS;  // checkpoint writes and reads
  double checkpoint_bytes_per_parameter = kCheckpointBytesPerParameter;
  double restart_s = kRestartGuessS;      // after each interruption, before the checkpoint is read
  double gpu_failures_per_gpu_hour = kLlama3GpuFailuresPerGpuHour;
  double node_failures_per_node_hour = kLlama3NodeFailuresPerNodeHour;
  long seed = 1;                          // the Monte Carlo's failures
  long trials = 2000;                     // Monte Carlo runs of the whole training
};

}  // namespace commbound::sim
