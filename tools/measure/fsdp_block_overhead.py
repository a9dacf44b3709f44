#!/usr/bin/env python3
"""What PyTorch FSDP adds to an MPT block's step on one GPU, beyond the block's kernels (issue
28.1: the FSDP / Composer rows megasim reads fast, flat in the GPU count, at short micro-batches).

The block is MPT's as in eager_autocast_layer_h200.py. A stack of LAYERS blocks runs forward then
backward (fixed output gradient), one process, one GPU, a world of one rank:
  bf16      BF16 parameters, no FSDP: the kernels alone (reference);
  autocast  FP32 parameters under BF16 autocast, no FSDP (what Composer's amp_bf16 runs);
  fsdp1     torch.distributed.fsdp.FullyShardedDataParallel around every block, FP32 parameters,
            MixedPrecision(param_dtype=bf16, reduce_dtype=fp32) as llm-foundry's DEFAULT
            mixed precision, limit_all_gathers, BACKWARD_PRE prefetch. With one rank FSDP1
            switches FULL_SHARD to NO_SHARD: its hooks, casts and gradient reduction run, no
            gather;
  fsdp2     torch.distributed.fsdp.fully_shard on every block and the stack, FP32 parameters,
            MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32): its all-gather copy-in /
            copy-out and reduce-scatter staging run on the one-rank group.
Per variant: the wall time of a step (host clock, synchronised at both ends) and the GPU time
between CUDA events around it, median of REPS steps after WARM warm-ups, divided by LAYERS;
and the kernels one step launches (torch.profiler, one step). A step whose wall time exceeds the
GPU's is host-bound.
Shapes: the suite's short-sequence rows: MPT-13B (2 x 2,048 tokens), MPT-7B (6 x 2,048) and
MPT-1B (14 x 2,048).
    python3 tools/measure/fsdp_block_overhead.py --out $OUT/h100-fsdp-block-overhead.json
STATUS: run once, on an H100 80GB HBM3 (the lent machine), stored as
bench/data/h100-fsdp-block-overhead.json.
"""
import os
import statistics
import time

import torch
import torch.distributed as dist

from eager_autocast_layer_h200 import Block
from gemm_attention_h200 import device_info, start_measurement, write_measurement
from layer_fwd_bwd_h200 import Stack

DEV = "cuda"
LAYERS, WARM, REPS = 4, 3, 10
SHAPES = {
    "mpt-13b_mbs2_s2048": dict(h=5120, heads=40, batch=2, seq=2048),
    "mpt-7b_mbs6_s2048": dict(h=4096, heads=32, batch=6, seq=2048),
    "mpt-1b_mbs14_s2048": dict(h=2048, heads=16, batch=14, seq=2048),
}


def build(variant, sh):
    h, heads = sh["h"], sh["heads"]
    fp32 = variant != "bf16"
    blocks = [Block(h, heads, torch.float32 if fp32 else torch.bfloat16) for _ in range(LAYERS)]
    if variant in ("bf16", "autocast"):
        return Stack(blocks, autocast=variant == "autocast")
    if variant == "fsdp1":
        from torch.distributed.fsdp import BackwardPrefetch, MixedPrecision, ShardingStrategy
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy
        mp = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32, buffer_dtype=torch.bfloat16)
        return FSDP(Stack(blocks, autocast=False), auto_wrap_policy=ModuleWrapPolicy({Block}),
                    sharding_strategy=ShardingStrategy.FULL_SHARD, mixed_precision=mp, limit_all_gathers=True,
                    backward_prefetch=BackwardPrefetch.BACKWARD_PRE, device_id=torch.cuda.current_device(),
                    use_orig_params=True)
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    stack = Stack(blocks, autocast=False)
    for b in stack.blocks:
        fully_shard(b, mp_policy=mp)
    fully_shard(stack, mp_policy=mp)
    return stack


def step(model, x, dy):
    y = model(x)
    y.backward(dy)


def time_steps(model, x, dy):
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    wall, gpu = [], []
    for i in range(WARM + REPS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        ev[0].record()
        step(model, x, dy)
        ev[1].record()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        if i >= WARM:
            wall.append((t1 - t0) / LAYERS)
            gpu.append(ev[0].elapsed_time(ev[1]) / 1e3 / LAYERS)
        model.zero_grad(set_to_none=True)
        x.grad = None
    return wall, gpu


def count_kernels(model, x, dy):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step(model, x, dy)
        torch.cuda.synchronize()
    model.zero_grad(set_to_none=True)
    x.grad = None
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)


def one_rank_world(port):
    """A NCCL process group of one rank on GPU 0 (FSDP needs one), seeded."""
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(port))
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=0, world_size=1)
    torch.manual_seed(0)


def main():
    out, t0 = start_measurement()
    one_rank_world(29511)
    res = {**device_info(), "layers": LAYERS, "warm": WARM, "reps": REPS, "method": __doc__, "rows": []}
    for name, sh in SHAPES.items():
        for variant in ("bf16", "autocast", "fsdp1", "fsdp2"):
            row = {"shape": name, **sh, "variant": variant}
            try:
                model = build(variant, sh)
                x = torch.randn(sh["batch"], sh["seq"], sh["h"], device=DEV, dtype=torch.bfloat16, requires_grad=True)
                dy = torch.randn_like(x)
                wall, gpu = time_steps(model, x, dy)
                row.update(wall_s_per_layer=statistics.median(wall), gpu_s_per_layer=statistics.median(gpu),
                           kernels_per_layer=count_kernels(model, x, dy) / LAYERS)
            except Exception as e:  # noqa: BLE001 - record what failed and go on
                row["error"] = repr(e)[:400]
            res["rows"].append(row)
            print(row, flush=True)
            model = None
            torch.cuda.empty_cache()
    dist.destroy_process_group()
    write_measurement(res, out, t0)


if __name__ == "__main__":
    main()
