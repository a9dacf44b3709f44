#!/usr/bin/env python3
"""Host time of one torch.distributed NCCL call, as Megatron-Core issues its collectives.

megasim's per-launch host rates (hardware profile host_dispatch_s times the framework's
host_launch_factor_*) were measured on one GPU, where Megatron-Core bypasses every collective
(tensor_parallel/mappings.py: `if world_size == 1: return input`). On a real job each
collective is a torch.distributed call the host makes in the layer's code: ProcessGroupNCCL's
work object, events and stream waits, ncclGroupStart / the NCCL call(s) / ncclGroupEnd. When the
host bounds a pass (the MoE layers of fine-grained models) that time adds to the pass.

Method: one process, an NCCL process group of world size 1 on this GPU (NCCL still runs each
call: a one-rank communicator copies locally), the GPU kept busy by torch.cuda._sleep enqueued
first so that the host never waits. Timed per call, host wall time over N back-to-back calls
(time.perf_counter, no synchronize inside), median of REPS loops:
  linear      torch.nn.Linear(2048, 2048) forward on 8,192 BF16 tokens, autograd on: the anchor
              whose host time on a DGX H100 host is published (TE issue #2053: 13.48 us), so
              this host's figures carry to a DGX H100 host by 13.48 / linear;
  eager_op    x * 2 on a small tensor with autograd (one plain launch);
  all_to_all  Megatron-Core's _AllToAll.forward body (input.contiguous(), new_empty of the
              summed output splits, all_to_all_single with the split lists) inside an autograd
              Function, as token_dispatcher.py calls it for the tokens and the probabilities;
  all_gather  _gather_along_first_dim's equal-split path: torch.empty of the gathered size and
              all_gather_into_tensor (the dispatcher's int64 token counts, 128 experts);
  all_reduce  _reduce: all_reduce of 128 int64 counts (the load-balancing loss);
  reduce_scatter  _reduce_scatter_along_first_dim: torch.empty and reduce_scatter_tensor.
One rank means one send and one receive inside the all-to-all's group; at EP n NCCL enqueues n
of each (ncclSend / ncclRecv host calls), which this one-GPU run cannot time: a floor for EP > 1.
    python3 tools/measure/nccl_call_host_time.py --out bench/data/h100-nccl-call-host-time.json

STATUS: run three times on one lent H100 host (Intel Xeon, torch 2.11/CUDA 13, NCCL 2.28.9),
2026-12-07: bench/data/h100-nccl-call-host-time.json, -run2, -run3. Linear 24.5-28.4 us (the DGX
H100 host's 13.48), so at a DGX host: Megatron-Core's all-to-all 25.8-43.4 us (median 36.5),
all-gather / reduce-scatter 15.3-28.7 us (median 22.5), all-reduce 10.1-12.4 (median 11.2): the
hardware profiles' launch.host_all_to_all_call_s, host_collective_call_s, host_all_reduce_call_s.
"""
import os
import platform
import statistics
import time

import torch
import torch.distributed as dist

from gemm_attention_h200 import device_info, start_measurement, write_measurement
from host_linear_overhead import cpu_model

WARM, REPS, N = 20, 31, 64
SLEEP_CYCLES = 200_000_000  # ~0.1 s of GPU time ahead of each loop: the host never waits
EXPERTS, TOKENS, HIDDEN = 128, 8192, 2048


class AllToAll(torch.autograd.Function):
    """Megatron-Core 0d8e0714 tensor_parallel/mappings.py _AllToAll, minus its one-rank bypass."""

    @staticmethod
    def forward(ctx, group, inp, output_split_sizes, input_split_sizes):
        ctx.group, ctx.output_split_sizes, ctx.input_split_sizes = group, output_split_sizes, input_split_sizes
        inp = inp.contiguous()
        out = inp.new_empty(size=[sum(output_split_sizes)] + list(inp.size()[1:]), dtype=inp.dtype,
                            device=torch.cuda.current_device())
        dist.all_to_all_single(out, inp, output_split_sizes=output_split_sizes, input_split_sizes=input_split_sizes,
                               group=group)
        return out

    @staticmethod
    def backward(ctx, *grad_output):
        return None, AllToAll.apply(ctx.group, *grad_output, ctx.input_split_sizes, ctx.output_split_sizes), None, None


def host_us(fn):
    for _ in range(WARM):
        fn()
    torch.cuda.synchronize()
    host = []
    for _ in range(REPS):
        torch.cuda.synchronize()
        torch.cuda._sleep(SLEEP_CYCLES)
        t = time.perf_counter()
        for _ in range(N):
            fn()
        host.append((time.perf_counter() - t) / N * 1e6)
        torch.cuda.synchronize()
    return {"host_us_per_call": statistics.median(host), "host_us_min": min(host), "host_us_max": max(host)}


def main():
    out, t0 = start_measurement()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29531")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    group = dist.group.WORLD
    lin = torch.nn.Linear(HIDDEN, HIDDEN, bias=False, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(TOKENS, HIDDEN, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    small = torch.randn(1024, device="cuda", requires_grad=True)
    tokens = torch.randn(4096, HIDDEN, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    probs = torch.rand(4096, device="cuda", dtype=torch.float32, requires_grad=True)
    counts = torch.zeros(EXPERTS, device="cuda", dtype=torch.long)
    shard = torch.zeros(1024, HIDDEN, device="cuda", dtype=torch.bfloat16)
    splits = [4096]

    def gather():
        o = torch.empty([EXPERTS], dtype=counts.dtype, device="cuda")
        dist.all_gather_into_tensor(o, counts.contiguous(), group=group)

    def reduce_scatter():
        o = torch.empty([shard.size(0)] + list(shard.size()[1:]), dtype=shard.dtype, device="cuda")
        dist.reduce_scatter_tensor(o, shard.contiguous(), group=group)

    calls = {
        "linear": lambda: lin(x),
        "eager_op": lambda: small * 2,
        "all_to_all_tokens": lambda: AllToAll.apply(group, tokens, splits, splits),
        "all_to_all_probs": lambda: AllToAll.apply(group, probs, splits, splits),
        "all_gather": gather,
        "all_reduce": lambda: dist.all_reduce(counts.contiguous(), group=group),
        "reduce_scatter": reduce_scatter,
    }
    rows = {}
    for name, fn in calls.items():
        rows[name] = host_us(fn)
        print(f"{name:18s} host {rows[name]['host_us_per_call']:7.2f} us "
              f"(min {rows[name]['host_us_min']:.2f} max {rows[name]['host_us_max']:.2f})", flush=True)
    scale = 13.48 / rows["linear"]["host_us_per_call"]
    res = {**device_info(),
           "cpu_model": cpu_model(),
           "python": platform.python_version(),
           "torch": torch.__version__,
           "nccl": ".".join(str(v) for v in torch.cuda.nccl.version()),
           "method": __doc__.split("Method:", 1)[1].split("    python3", 1)[0].strip(),
           "anchor": {"source": "NVIDIA/TransformerEngine issue #2053 (2025-08-11): torch.nn.Linear forward on a DGX "
                                "H100 host (Xeon Platinum 8480C)", "dgx_h100_host_us": 13.48,
                      "dgx_h100_over_this_host": scale},
           "rows": rows,
           "dgx_h100_us": {k: v["host_us_per_call"] * scale for k, v in rows.items()}}
    write_measurement(res, out, t0)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
