#!/usr/bin/env python3
"""Count the CUDA launches of Megatron-Core's MoE layer module by module (issue 26).

STATUS: run once, on a lent H100 80GB HBM3 (torch 2.11 / CUDA 13.0, 2026-12-07), stored as
bench/data/h100-mcore-moe-kernels-by-module.json. Router (TopKRouter) forward / backward on this
unfused path: 14 / 10 launches with no loss, +2 forward under forced balance, +17 / +8 with the
aux loss; the sequence loss with sigmoid scores, expert bias and group-limited routing 55 / 34.
The layer with the aux loss makes 143 launches forward and 140 backward with autograd on (125
forward under no_grad, where the router skips its loss): mcore_moe_host_time.py's per-launch
figures are divided by these. megasim prices the fused path the recipes run
(src/model/moe_router_ops.cpp, counted from TE's source), which this run cannot check.

megasim charges the host `host_dispatch_s` x `system.host_launch_factor_*` for each kernel it
lists. The factor was measured per launch *as Megatron-Core issues them*
(tools/measure/mcore_moe_host_time.py: 125 forward launches for an MoE layer at 128 tokens), so
megasim's kernel list must hold the launches the real code makes, or the host time comes out
short. This script runs Megatron-Core's own TransformerLayer (the commit Megatron-Bridge v0.2.0
pins; local spec, as Transformer Engine is not on the lent machine) and attributes every CUDA
kernel and copy, forward and backward, to the module that issued it:

- forward: each module's forward runs inside a profiler range (forward pre/post hooks); a kernel
  belongs to the innermost module range above the op that launched it.
- backward: autograd's evaluate_function ranges carry the sequence number of the forward op
  they differentiate; the backward kernels go to that forward op's module.

The layer is one EP rank's share of Qwen3-30B-A3B at EP 8 (hidden 2048, 32 heads of 128,
4 query groups, QK layernorm, RMSNorm, SwiGLU experts of width 768, top-8), 16 local experts
(EP 1 on one GPU: the dispatcher takes its single-rank branch; the EP > 1 branch's extra
bookkeeping is listed from the source in megasim), GroupedMLP served by torch._grouped_mm.
Router variants as the recipes set them: Qwen3 `aux_loss` (coefficient 1e-3), DeepSeek-V3
`seq_aux_loss` with group-limited routing (8 groups, top-4 groups, sigmoid scores, expert bias),
GPT-OSS `none`; each with and without the forced balance (random logits) the benchmarks run.

    python3 tools/measure/mcore_moe_kernels_by_module.py --mcore build-mcore --out bench/data/h100-mcore-moe-kernels-by-module.json
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcore_moe_host_time import record_error, rope, start_mcore_run, write_result  # noqa: E402

H, HEADS, GROUPS, D = 2048, 32, 4, 128
TOPK, EXPERT_FFN, EXPERTS = 8, 768, 16
TOKENS = 128
MODULE_KINDS = ("SelfAttention", "DotProductAttention", "ColumnParallelLinear", "RowParallelLinear",
                "TopKRouter", "MoEAlltoAllTokenDispatcher", "GroupedMLP", "SharedExpertMLP",
                "MoELayer", "WrappedTorchNorm", "TransformerLayer", "RotaryEmbedding")


def build_layer(router):
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.transformer_block import TransformerBlock
    from megatron.core.transformer.transformer_config import TransformerConfig

    moe = dict(num_moe_experts=EXPERTS, moe_router_topk=TOPK, moe_ffn_hidden_size=EXPERT_FFN,
               moe_token_dispatcher_type="alltoall", moe_grouped_gemm=True,
               moe_router_force_load_balancing=router["force"])
    if router["kind"] == "aux_loss":
        moe.update(moe_router_load_balancing_type="aux_loss", moe_aux_loss_coeff=1e-3)
    elif router["kind"] == "seq_aux_loss":
        moe.update(moe_router_load_balancing_type="seq_aux_loss", moe_aux_loss_coeff=1e-4,
                   moe_router_score_function="sigmoid", moe_router_enable_expert_bias=True,
                   moe_router_num_groups=8, moe_router_group_topk=4,
                   moe_router_topk_scaling_factor=2.5, moe_router_dtype="fp32")
    else:
        moe.update(moe_router_load_balancing_type="none")
    cfg = TransformerConfig(
        num_layers=1, hidden_size=H, num_attention_heads=HEADS, num_query_groups=GROUPS,
        kv_channels=D, ffn_hidden_size=6144, normalization="RMSNorm", qk_layernorm=True,
        gated_linear_unit=True, activation_func=F.silu, add_bias_linear=False,
        hidden_dropout=0.0, attention_dropout=0.0, bf16=True, params_dtype=torch.bfloat16,
        pipeline_dtype=torch.bfloat16, bias_dropout_fusion=False, apply_rope_fusion=False,
        masked_softmax_fusion=False, gradient_accumulation_fusion=False, **moe)
    spec = get_gpt_layer_local_spec(num_experts=EXPERTS, moe_grouped_gemm=True,
                                    qk_layernorm=True, normalization="RMSNorm")
    return TransformerBlock(cfg, spec, post_process=False).cuda()


def attribute(block, x, emb):
    """Kernels (and copies) per module kind, forward and backward, of one layer step."""
    from torch.profiler import ProfilerActivity, profile, record_function
    ranges, handles = {}, []
    for name, m in block.named_modules():
        k = type(m).__name__
        if k not in MODULE_KINDS:
            continue
        def pre(mod, args, n=name, key=k):
            ranges[n] = record_function("module::" + key)
            ranges[n].__enter__()
        def post(mod, args, out, n=name):
            ranges.pop(n).__exit__(None, None, None)
        handles += [m.register_forward_pre_hook(pre), m.register_forward_hook(post)]
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        y = block(hidden_states=x, attention_mask=None, rotary_pos_emb=emb)
        y = y[0] if isinstance(y, tuple) else y
        y.backward(torch.ones_like(y))
        torch.cuda.synchronize()
    for h in handles:
        h.remove()
    block.zero_grad(set_to_none=True)
    x.grad = None

    events = prof.events()

    def module_of(e):
        p = e
        while p is not None:
            if p.name.startswith("module::"):
                return p.name[len("module::"):]
            p = p.cpu_parent
        return None

    seq_module = {}  # forward op sequence number -> module kind
    for e in events:
        if e.sequence_nr >= 0 and not e.name.startswith("autograd::"):
            m = module_of(e)
            if m is not None:
                seq_module.setdefault(e.sequence_nr, m)

    def backward_module(e):
        p = e
        while p is not None:
            if p.name.startswith("autograd::engine::evaluate_function") and p.sequence_nr >= 0:
                return seq_module.get(p.sequence_nr, "unattributed")
            p = p.cpu_parent
        return None

    out = {"forward": {}, "backward": {}}
    total = {"forward": 0, "backward": 0}
    names = {"forward": {}, "backward": {}}
    for e in events:
        for k in getattr(e, "kernels", []) or []:
            b = backward_module(e)
            pas = "backward" if b is not None else "forward"
            mod = b if b is not None else (module_of(e) or "outside")
            out[pas][mod] = out[pas].get(mod, 0) + 1
            total[pas] += 1
            key = f"{mod}: {e.name}"
            names[pas][key] = names[pas].get(key, 0) + 1
    cuda_events = sum(1 for e in events if e.device_type == torch.autograd.DeviceType.CUDA)
    return {"kernels_by_module": out, "total": total, "cuda_events": cuda_events,
            "ops_by_module": names}


def main():
    out, t0, res = start_mcore_run(29519, tokens=TOKENS, local_experts=EXPERTS, method=__doc__)
    routers = [{"kind": k, "force": f} for k in ("aux_loss", "seq_aux_loss", "none")
               for f in (True, False)]
    for r in routers:
        try:
            torch.manual_seed(0)
            block = build_layer(r)
            x = torch.randn(TOKENS, 1, H, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            emb = rope(TOKENS)
            for _ in range(3):  # warm-up: allocator, lazy inits, autotuning
                y = block(hidden_states=x, attention_mask=None, rotary_pos_emb=emb)
                y = y[0] if isinstance(y, tuple) else y
                y.backward(torch.ones_like(y))
                block.zero_grad(set_to_none=True)
            row = {"router": r, **attribute(block, x, emb)}
            res["rows"].append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "ops_by_module"}), flush=True)
            del block
            torch.cuda.empty_cache()
        except Exception:
            record_error(res, router=r)
    write_result(res, out, t0)


if __name__ == "__main__":
    main()
