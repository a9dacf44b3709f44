#!/usr/bin/env python3
"""What PyTorch FSDP's per-unit gradient and parameter staging costs beside backward compute, per
layer in steady state (issue 28.3: the small-batch FSDP rows megasim reads 15% fast).

FSDP stages every unit's full, unsharded tensors once per micro-batch, whatever the micro-batch
size (PyTorch source, torch/distributed/fsdp):
  FSDP1 (_runtime_utils._post_backward_hook / _reduce_grad): on the post-backward stream the
        unsharded BF16 gradient is cast to reduce_dtype FP32 (read 2 B, write 4 B per parameter)
        and pre-divided in place by the gradient pre-divide factor (2 on 8 ranks, 8 on 64; read
        and write 4 B) before the reduce-scatter;
  FSDP2 (_fsdp_collectives.foreach_all_gather_copy_out / foreach_reduce): every all-gather's
        output is copied out into the unsharded parameters (read and write 2 B, forward and
        backward) and the gradients are copied, cast to FP32, into the reduce-scatter input
        (_chunk_cat: read 2 B, write 4 B).
Both come to 14 B of HBM traffic per parameter per micro-batch. On one GPU no collective runs,
so only the staging and its overlap with compute are measured.

Variants, each a stack of L blocks (MPT's block of eager_autocast_layer_h200.py, BF16
parameters), forward then backward with a fixed output gradient:
  bf16          the kernels alone (reference);
  stage_side    FSDP1's staging done as FSDP1 does it: a hook on each block's parameters, when
                their gradient is ready, makes a side stream wait for the compute stream and
                there casts the gradient to FP32 and divides it by 2, beside the next block's
                backward;
  stage_serial  the same kernels on the compute stream (no overlap possible);
  fsdp1         torch.distributed.fsdp.FullyShardedDataParallel per block, FP32 parameters,
                MixedPrecision(bf16, reduce fp32): one rank, so NO_SHARD (param cast of the full
                unit each forward, gradient cast, no pre-divide);
  fsdp2         fully_shard per block and on the stack, FP32 parameters, MixedPrecisionPolicy(bf16,
                reduce fp32) on a one-rank group: real copy-in, copy-out and RS staging.
Each variant is timed at L = 2 and L = 8 blocks (CUDA events around forward+backward, median of
REPS steps after WARM warm-ups); the per-layer steady-state time is the slope (t8 - t2) / 6,
free of the first gather and the last reduce that a short stack inflates. Also written: the
staging bytes per layer and the time they take alone at the measured copy rate.
    python3 tools/measure/fsdp_grad_staging.py --out $OUT/h100-fsdp-grad-staging.json
"""
import statistics

import torch
import torch.distributed as dist

from eager_autocast_layer_h200 import Block
from fsdp_block_overhead import one_rank_world
from gemm_attention_h200 import device_info, start_measurement, write_measurement
from layer_fwd_bwd_h200 import Stack

DEV = "cuda"
LAYER_COUNTS, WARM, REPS = (2, 8), 3, 10
SHAPES = {
    "mpt-13b_mbs2_s2048": dict(h=5120, heads=40, batch=2, seq=2048),
    "mpt-7b_mbs6_s2048": dict(h=4096, heads=32, batch=6, seq=2048),
    "mpt-1b_mbs14_s2048": dict(h=2048, heads=16, batch=14, seq=2048),
}
VARIANTS = ("bf16", "stage_side", "stage_serial", "fsdp1", "fsdp2")


def add_staging(stack, side):
    """FSDP1's gradient staging per parameter, when its gradient is final: cast to FP32 and
    pre-divide, on a side stream that first waits for the compute stream (side=True), or on the
    compute stream. The gradient is then dropped, as FSDP frees the unsharded gradient."""
    stream = torch.cuda.Stream() if side else None
    staged = []

    def hook(p):
        if side:
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                g = p.grad.to(torch.float32)
                g.div_(2.0)
                p.grad.record_stream(stream)
        else:
            g = p.grad.to(torch.float32)
            g.div_(2.0)
        staged.append(g)
        p.grad = None

    for p in stack.parameters():
        p.register_post_accumulate_grad_hook(hook)

    def end_of_step():
        if side:
            torch.cuda.current_stream().wait_stream(stream)
        staged.clear()
    return end_of_step


def build(variant, sh, layers):
    h, heads = sh["h"], sh["heads"]
    fp32 = variant in ("fsdp1", "fsdp2")
    blocks = [Block(h, heads, torch.float32 if fp32 else torch.bfloat16) for _ in range(layers)]
    stack = Stack(blocks, autocast=False)
    if variant == "bf16":
        return stack, None
    if variant in ("stage_side", "stage_serial"):
        return stack, add_staging(stack, variant == "stage_side")
    if variant == "fsdp1":
        from torch.distributed.fsdp import BackwardPrefetch, MixedPrecision, ShardingStrategy
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy
        mp = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32, buffer_dtype=torch.bfloat16)
        return FSDP(stack, auto_wrap_policy=ModuleWrapPolicy({Block}), sharding_strategy=ShardingStrategy.FULL_SHARD,
                    mixed_precision=mp, limit_all_gathers=True, backward_prefetch=BackwardPrefetch.BACKWARD_PRE,
                    device_id=torch.cuda.current_device(), use_orig_params=True), None
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for b in stack.blocks:
        fully_shard(b, mp_policy=mp)
    fully_shard(stack, mp_policy=mp)
    return stack, None


def step_gpu_s(model, end_of_step, x, dy):
    """Median GPU seconds of forward+backward over REPS steps after WARM warm-ups."""
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    times = []
    for i in range(WARM + REPS):
        torch.cuda.synchronize()
        ev[0].record()
        model(x).backward(dy)
        if end_of_step:
            end_of_step()
        ev[1].record()
        torch.cuda.synchronize()
        if i >= WARM:
            times.append(ev[0].elapsed_time(ev[1]) / 1e3)
        model.zero_grad(set_to_none=True)
        x.grad = None
    return statistics.median(times)


def copy_rate_Bps():
    """HBM rate of a BF16 -> FP32 cast of 1 GiB of parameters (bytes read + written per second)."""
    n = 1 << 29
    a = torch.randn(n, device=DEV, dtype=torch.bfloat16)
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    for _ in range(3):
        a.to(torch.float32)
    torch.cuda.synchronize()
    ev[0].record()
    for _ in range(10):
        a.to(torch.float32)
    ev[1].record()
    torch.cuda.synchronize()
    return 10 * n * 6 / (ev[0].elapsed_time(ev[1]) / 1e3)


def main():
    out, t0 = start_measurement()
    one_rank_world(29512)
    rate = copy_rate_Bps()
    res = {**device_info(), "layer_counts": LAYER_COUNTS, "warm": WARM, "reps": REPS, "method": __doc__,
           "cast_rate_Bps": rate, "rows": []}
    for name, sh in SHAPES.items():
        params = 12 * sh["h"] * sh["h"]
        for variant in VARIANTS:
            row = {"shape": name, **sh, "variant": variant, "params_per_layer": params,
                   "staging_bytes_per_layer": 14 * params, "staging_alone_s": 14 * params / rate}
            try:
                for layers in LAYER_COUNTS:
                    model, end = build(variant, sh, layers)
                    x = torch.randn(sh["batch"], sh["seq"], sh["h"], device=DEV, dtype=torch.bfloat16,
                                    requires_grad=True)
                    row[f"step_s_L{layers}"] = step_gpu_s(model, end, x, torch.randn_like(x))
                    model = None
                    torch.cuda.empty_cache()
                lo, hi = LAYER_COUNTS
                row["per_layer_s"] = (row[f"step_s_L{hi}"] - row[f"step_s_L{lo}"]) / (hi - lo)
            except Exception as e:  # noqa: BLE001 - record what failed and go on
                row["error"] = repr(e)[:400]
            res["rows"].append(row)
            print(row, flush=True)
    dist.destroy_process_group()
    write_measurement(res, out, t0)


if __name__ == "__main__":
    main()
