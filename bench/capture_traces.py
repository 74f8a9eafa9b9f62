#!/usr/bin/env python3
"""Capture PyTorch profiler (Kineto) traces of a Llama-shaped training step for commbound's trace
replay (docs/traces.md): the traces a GPU session replays with `[workload] trace = ...` and checks
against the measured step time.

NOT RUN HERE: written on a machine without a GPU or PyTorch; a session with a GPU runs it, e.g.
    python3 bench/capture_traces.py --out traces/                       # one GPU
    torchrun --nproc-per-node 8 bench/capture_traces.py --out traces/   # FSDP2 over 8 GPUs

For each model (Llama-2 7B shapes with 4 layers; the 1B of calibration/models.toml) and each mode
(eager, torch.compile) it trains a few steps with bf16 autocast and fused AdamW (FSDP2 fully_shard
per layer when more than one GPU), profiles steps 6-8 with CUDA sync events and writes, per rank:
    OUT/<model>-<mode>/rank<R>.pt.trace.json.gz   the trace (tensorboard_trace_handler, gzip)
    OUT/<model>-<mode>/rank<R>.json               measured step time (median of 5 steps without the
                                                  profiler, and of the 3 profiled steps; CUDA-event
                                                  timed), max_memory_allocated
Kept simple on purpose: random tokens, no data loader, no checkpointing.
"""
import argparse
import json
import os
import statistics

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

# Shapes from calibration/models.toml (llama2-7b: 32 x 4096, 32 heads, FFN 11008; llama2-1b:
# 24 x 2048, 16 heads, FFN 5504), vocabulary 32000.
MODELS = {
    "llama2-7b-4layers": dict(layers=4, hidden=4096, heads=32, ffn=11008, vocab=32000),
    "llama2-1b": dict(layers=24, hidden=2048, heads=16, ffn=5504, vocab=32000),
}


def rotary(x, cos, sin):
    """Llama's rotary embedding as eager frameworks run it (HF transformers' rotate_half): a few
    unfused elementwise kernels on q and k, with cos/sin computed once per step."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Block(nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.RMSNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden, bias=False)
        self.o = nn.Linear(hidden, hidden, bias=False)
        self.norm2 = nn.RMSNorm(hidden)
        self.gate_up = nn.Linear(hidden, 2 * ffn, bias=False)
        self.down = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x, cos, sin):
        b, s, h = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, h // self.heads).unbind(2)
        q, k = rotary(q, cos, sin), rotary(k, cos, sin)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, h))
        gate, up = self.gate_up(self.norm2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class Llama(nn.Module):
    def __init__(self, layers, hidden, heads, ffn, vocab):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads, ffn) for _ in range(layers))
        self.norm = nn.RMSNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)
        self.head_dim = hidden // heads

    def forward(self, tokens):
        x = self.embed(tokens)
        # Rotary tables (base 10000, Llama 2), [seq, 1, head_dim] against q/k's [batch, seq, heads, head_dim].
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2, device=x.device).float() / self.head_dim))
        angles = torch.outer(torch.arange(tokens.shape[1], device=x.device).float(), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)[:, None, :]
        cos, sin = angles.cos(), angles.sin()
        for block in self.blocks:
            x = block(x, cos, sin)
        return self.head(self.norm(x))


def capture(name, shape, compiled, args, rank, world):
    device = torch.device("cuda", torch.cuda.current_device())
    model = Llama(**shape).to(device)
    if world > 1:
        from torch.distributed.fsdp import fully_shard  # FSDP2 (PyTorch >= 2.6)
        for block in model.blocks:
            fully_shard(block)
        fully_shard(model)
    if compiled:
        model = torch.compile(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    tokens = torch.randint(0, shape["vocab"], (args.batch, args.seq + 1), device=device)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(tokens[:, :-1])
            loss = F.cross_entropy(logits.float().flatten(0, 1), tokens[:, 1:].flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def timed_step():
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end)

    out = os.path.join(args.out, f"{name}-{'compile' if compiled else 'eager'}")
    os.makedirs(out, exist_ok=True)
    from torch._C._profiler import _ExperimentalConfig
    torch.cuda.reset_peak_memory_stats()
    # The step as the user's job runs it: warm-up (compilation, allocator), then timed without the profiler.
    for _ in range(3):
        step()
    plain_ms = [timed_step() for _ in range(5)]
    times_ms = []
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 schedule=schedule(wait=3, warmup=2, active=3),
                 experimental_config=_ExperimentalConfig(enable_cuda_sync_events=True),
                 on_trace_ready=tensorboard_trace_handler(out, worker_name=f"rank{rank}", use_gzip=True)) as prof:
        for i in range(8):
            elapsed_ms = timed_step()
            if i >= 5:
                times_ms.append(elapsed_ms)
            prof.step()
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump({"model": name, "compiled": compiled, "world_size": world, "batch": args.batch, "seq_len": args.seq,
                   "step_ms_median": statistics.median(plain_ms), "step_ms": plain_ms,
                   "profiled_step_ms_median": statistics.median(times_ms), "profiled_step_ms": times_ms,
                   "max_memory_allocated_bytes": torch.cuda.max_memory_allocated(),
                   "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}, f, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seq", type=int, default=4096)
    p.add_argument("--models", default=",".join(MODELS))
    args = p.parse_args()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    for name in args.models.split(","):
        for compiled in (False, True):
            capture(name, MODELS[name], compiled, args, rank, world)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
