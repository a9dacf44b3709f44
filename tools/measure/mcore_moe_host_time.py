#!/usr/bin/env python3
"""Measure Megatron-Core's own host time per transformer layer, dense and MoE (issue 26).

megasim charges the host `host_dispatch_s` per kernel launch (a plain eager PyTorch layer with
autograd, measured). Megatron-Core wraps every kernel in Python of its own (module forwards,
custom autograd functions, the token dispatcher's bookkeeping, the router), which that figure
does not contain. This script runs Megatron-Core's real TransformerLayer code on one GPU and
measures how long the host takes to issue a layer, forward and forward+backward, and how many
kernels it launches, so that host time per launch *as Megatron-Core issues them* is a
measured figure rather than one inferred from published step times.

What is real and what is not:
- Megatron-Core's Python is the real thing: `megatron/core` of the commit Megatron-Bridge
  v0.2.0 (25.11) pins (NVIDIA/Megatron-LM 0d8e0714cd29), carried to the device (it has no
  network); TransformerLayer, SelfAttention, TopKRouter, MoEAlltoAllTokenDispatcher, MoELayer.
- Transformer Engine and Apex are not on the lent machine, so the layers use Megatron-Core's
  local spec (`get_gpt_layer_local_spec`): torch norms, Megatron's own Column/RowParallelLinear,
  DotProductAttention (unfused softmax). The experts run either SequentialMLP (a Python loop of
  one MLP per local expert) or GroupedMLP with its grouped GEMM (`grouped_gemm.ops.gmm`) served
  by torch._grouped_mm (one kernel per FC, as TE's CUTLASS grouped GEMM would be).
  TE's modules (their quantizers, FP8 casts, GroupedLinear's per-expert host loop) are not
  measured here: under TE the host time per layer is this plus TE's own.
- One GPU: EP 1, TP 1, so no all-to-all is issued (the dispatcher still counts the tokens per
  expert, copies them to the host and synchronises, as at EP > 1). The layer is one EP rank's
  share of Qwen3-30B-A3B at EP 8: hidden 2048, 32 heads of 128, 4 query groups, QK layernorm,
  RMSNorm, SwiGLU experts of width 768, top-8; the number of (all local) experts is varied
  (8, 16, 32) to separate what the host pays per layer from what it pays per local expert. A
  dense layer (SwiGLU FFN 6144) is measured beside it.

Timing: a stack of LAYERS layers (TransformerBlock), wall-clock per step between
torch.cuda.synchronize() calls, median of REPS after WARM warm-ups, divided by LAYERS; also the
time at which the host had issued the step (before the final synchronize). At 128 tokens the
GPU work is tiny, so the wall time is the host's issue time; at 4096 tokens the GPU bounds.
Kernels per layer (forward, forward+backward) are counted with torch.profiler. The forward's
host time is split by module with forward hooks (a separate pass: hooks cost time of their own).

The Megatron-Core sources are not part of this repository: build-mcore/ (git-ignored) holds
`git archive 0d8e0714cd29c01e164fe6de9f532182bdffa942 megatron/core` of NVIDIA/Megatron-LM,
carried to the lent machine with the run.
    python3 tools/measure/mcore_moe_host_time.py --mcore build-mcore --out bench/data/h100-mcore-moe-host-time.json

STATUS: run once, on a lent H100 80GB HBM3 host (torch 2.11 / CUDA 13.0, 2026-12-06), stored as
bench/data/h100-mcore-moe-host-time.json; in the same session on the same host
tools/measure/moe_host_sync_h200.py gave the plain-PyTorch reference,
bench/data/h100-moe-host-sync-host2.json. The ratios of the two (host time per launch at 128
tokens; forward = forward_s / kernels_forward, backward = the rest over the rest) are the
presets' system.host_launch_factor_dense_forward / _backward (1.45 / 1.07) and
host_launch_factor_moe_forward / _backward (1.99 / 1.74, 16 local experts; 1.90 / 1.63 at 32).
Correction (2026-12-07): kernels_forward is counted under torch.no_grad(), where the MoE router
skips its load-balancing loss, but the timed forward runs with autograd: the MoE layer's timed
forward makes 143 launches and its backward 140 (mcore_moe_kernels_by_module.py on the same
layer), so the MoE figures divide by those (the first analysis, by 125 and 158, gave 2.28 / 1.54).
The dense layer has no such launches. One glitch: the profiler counted 749 forward kernels for the 8-expert grouped layer (125 for 16
and 32), so that row's forward split is not used (its row says so).
"""
import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import time
import traceback
import types

import torch
import torch.nn.functional as F

LAYERS, WARM, REPS = 4, 3, 9
H, HEADS, GROUPS, D = 2048, 32, 4, 128
TOPK, EXPERT_FFN, DENSE_FFN = 8, 768, 6144


def install_grouped_gemm_shim():
    """Megatron-Core's GroupedMLP calls grouped_gemm.ops.gmm(a, b, batch_sizes, trans_b);
    serve it with torch._grouped_mm (one kernel, autograd included)."""
    gmm_impl = getattr(F, "grouped_mm", None) or torch._grouped_mm

    def gmm(a, b, batch_sizes, trans_b=False):
        offs = torch.cumsum(batch_sizes.to(device=a.device), 0, dtype=torch.int32)
        if trans_b:
            b = b.transpose(-2, -1)
        return gmm_impl(a, b, offs=offs)

    sys.modules["grouped_gemm"] = types.SimpleNamespace(ops=types.SimpleNamespace(gmm=gmm))


def count_cuda_kernels(fn):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)


def build_block(experts, grouped):
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.transformer_block import TransformerBlock
    from megatron.core.transformer.transformer_config import TransformerConfig

    moe = {}
    if experts:
        moe = dict(num_moe_experts=experts, moe_router_topk=TOPK, moe_ffn_hidden_size=EXPERT_FFN,
                   moe_token_dispatcher_type="alltoall", moe_grouped_gemm=grouped,
                   moe_router_load_balancing_type="aux_loss", moe_aux_loss_coeff=1e-3)
    cfg = TransformerConfig(
        num_layers=LAYERS, hidden_size=H, num_attention_heads=HEADS, num_query_groups=GROUPS,
        kv_channels=D, ffn_hidden_size=DENSE_FFN, normalization="RMSNorm", qk_layernorm=True,
        gated_linear_unit=True, activation_func=F.silu, add_bias_linear=False,
        hidden_dropout=0.0, attention_dropout=0.0, bf16=True, params_dtype=torch.bfloat16,
        pipeline_dtype=torch.bfloat16, bias_dropout_fusion=False, apply_rope_fusion=False,
        masked_softmax_fusion=False, gradient_accumulation_fusion=False, **moe)
    spec = get_gpt_layer_local_spec(num_experts=experts or None, moe_grouped_gemm=grouped,
                                    qk_layernorm=True, normalization="RMSNorm")
    return TransformerBlock(cfg, spec, post_process=False).cuda()


def rope(tokens):
    from megatron.core.models.common.embeddings.rotary_pos_embedding import RotaryEmbedding
    return RotaryEmbedding(kv_channels=D, rotary_percent=1.0, rotary_base=1000000)(tokens)


def step(block, x, emb, backward):
    y = block(hidden_states=x, attention_mask=None, rotary_pos_emb=emb)
    if isinstance(y, tuple):
        y = y[0]
    if backward:
        y.backward(torch.ones_like(y))
    return y


def time_block(block, x, emb, backward):
    walls, issued = [], []
    for i in range(WARM + REPS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step(block, x, emb, backward)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        if i >= WARM:
            walls.append((time.perf_counter() - t0) / LAYERS)
            issued.append((t1 - t0) / LAYERS)
        block.zero_grad(set_to_none=True)
        x.grad = None
    return statistics.median(walls), statistics.median(issued)


def forward_split(block, x, emb):
    """Host seconds per layer forward in each module kind, by forward pre/post hooks."""
    acc, starts, handles = {}, {}, []
    kinds = ("SelfAttention", "TopKRouter", "SequentialMLP", "GroupedMLP", "MLP", "MoELayer",
             "WrappedTorchNorm", "DotProductAttention", "ColumnParallelLinear", "RowParallelLinear")
    for name, m in block.named_modules():
        k = type(m).__name__
        if k not in kinds:
            continue
        def pre(mod, args, key=k, n=name):
            starts[n] = time.perf_counter()
        def post(mod, args, out, key=k, n=name):
            acc[key] = acc.get(key, 0.0) + time.perf_counter() - starts[n]
        handles += [m.register_forward_pre_hook(pre), m.register_forward_hook(post)]
    samples = []
    for i in range(WARM + REPS):
        acc.clear()
        torch.cuda.synchronize()
        with torch.no_grad():
            step(block, x, emb, False)
        torch.cuda.synchronize()
        if i >= WARM:
            samples.append(dict(acc))
    for h in handles:
        h.remove()
    return {k: statistics.median(s[k] for s in samples) / LAYERS for k in samples[0]}


def host_profile(block, x, emb):
    """cProfile of one forward+backward (host functions by own time; cProfile slows them)."""
    pr = cProfile.Profile()
    torch.cuda.synchronize()
    pr.enable()
    step(block, x, emb, True)
    torch.cuda.synchronize()
    pr.disable()
    block.zero_grad(set_to_none=True)
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(30)
    return s.getvalue()


def measure(variant, experts, grouped, tokens_list, res):
    torch.manual_seed(0)
    block = build_block(experts, grouped)
    for tokens in tokens_list:
        x = torch.randn(tokens, 1, H, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        emb = rope(tokens)
        f, fi = time_block(block, x, emb, False)
        fb, fbi = time_block(block, x, emb, True)
        one = block.layers[0]
        def fwd1():
            with torch.no_grad():
                one(hidden_states=x, attention_mask=None, rotary_pos_emb=emb)
        def fwdbwd1():
            y = one(hidden_states=x, attention_mask=None, rotary_pos_emb=emb)
            y = y[0] if isinstance(y, tuple) else y
            y.backward(torch.ones_like(y))
        kf, kfb = count_cuda_kernels(fwd1), count_cuda_kernels(fwdbwd1)
        block.zero_grad(set_to_none=True)
        row = {"variant": variant, "local_experts": experts, "grouped_gemm": grouped,
               "tokens": tokens, "forward_s": f, "forward_host_issued_s": fi,
               "forward_backward_s": fb, "forward_backward_host_issued_s": fbi,
               "kernels_forward": kf, "kernels_forward_backward": kfb}
        if tokens == min(tokens_list):
            row["forward_host_split_s"] = forward_split(block, x, emb)
            if experts in (0, 16):
                row["host_profile_forward_backward"] = host_profile(block, x, emb)
        res["rows"].append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "host_profile_forward_backward"}),
              flush=True)
    del block
    torch.cuda.empty_cache()


def init_megatron_one_gpu(mcore, port):
    """Megatron-Core from the folder `mcore` on this one GPU: a world of one, TP = PP = EP = 1."""
    sys.path.insert(0, os.path.abspath(mcore))
    install_grouped_gemm_shim()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(port))
    torch.distributed.init_process_group("nccl", rank=0, world_size=1)
    torch.cuda.set_device(0)
    from megatron.core import parallel_state, tensor_parallel
    from megatron.core.transformer.moe import moe_utils
    # Without Transformer Engine this commit's moe_utils never binds te_general_gemm (its import
    # fails inside a try); the router's GEMM then falls back to torch, as intended there.
    if not hasattr(moe_utils, "te_general_gemm"):
        moe_utils.te_general_gemm = None
    parallel_state.initialize_model_parallel(1, 1, expert_model_parallel_size=1)
    tensor_parallel.model_parallel_cuda_manual_seed(0)


def start_mcore_run(port, **fields):
    """Common start of the Megatron-Core measurements: parse --mcore / --out, bring up the one-GPU
    world and begin the result with the device, the versions and the script's own `fields`.
    Returns the output path, the start time and the result."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--mcore", required=True, help="folder holding megatron/core")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    t0 = time.time()
    init_megatron_one_gpu(args.mcore, port)
    props = torch.cuda.get_device_properties(0)
    res = {"device": props.name, "torch": torch.__version__, "cuda": torch.version.cuda,
           "megatron_core": "NVIDIA/Megatron-LM 0d8e0714cd29 (Megatron-Bridge v0.2.0's pin)",
           **fields, "rows": [], "errors": []}
    return args.out, t0, res


def record_error(res, **what):
    """Keep the other variants' rows: the failed one's traceback goes into res["errors"]."""
    res["errors"].append({**what, "traceback": traceback.format_exc()})
    print(res["errors"][-1]["traceback"], flush=True)


def write_result(res, path, t0):
    """Write the run's JSON (with its elapsed time) and leave the one-GPU world."""
    res["elapsed_s"] = time.time() - t0
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
    torch.distributed.destroy_process_group()


def main():
    out, t0, res = start_mcore_run(29517, layers=LAYERS, warm=WARM, reps=REPS, method=__doc__)
    variants = [("dense", 0, False), ("moe-sequential", 8, False), ("moe-sequential", 16, False),
                ("moe-sequential", 32, False), ("moe-grouped", 8, True), ("moe-grouped", 16, True),
                ("moe-grouped", 32, True)]
    for name, experts, grouped in variants:
        try:
            measure(name, experts, grouped, (128, 4096), res)
        except Exception:
            record_error(res, variant=name, local_experts=experts)
    write_result(res, out, t0)


if __name__ == "__main__":
    main()
