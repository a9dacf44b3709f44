#!/usr/bin/env python3
"""Measure Megatron-style unfused ("core") attention and its batched GEMMs on one GPU.

Grounds the `unfused` attention model in src/hw/kernel_model.cpp: the score GEMMs (QK^T and
probabilities x V, and their four backward GEMMs) run as batched GEMMs over the full s x s
score matrix; softmax and dropout run as separate memory-bound kernels between them. Softmax two
ways: torch.softmax over the whole row, and a Triton copy of Megatron's fused
scaled_upper_triang_masked_softmax (scale, causal mask and softmax in one kernel that reads only
the unmasked prefix of each row; its backward likewise).

Timing: tools/measure/gemm_attention_h200.py's timed() (median of 12 samples, back-to-back
launches, 512 MiB L2 flush before each call with its own time subtracted).

  python3 tools/measure/unfused_attention_h200.py --out bench/data/h200-unfused-attention.json
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm_attention_h200 import (DT, device_info, make_flush, start_measurement, timed,  # noqa: E402
                                  write_measurement)

# (batch x heads on one TP rank, sequence, head_dim): 175B / 530B at TP 8 (16 heads of 96 / 128),
# GPT 1.7B at TP 1 (24 heads of 96), GPT 18B at TP 8 (6 heads of 128), Llama-8B-like (32 of 128).
SHAPES = [(16, 2048, 96), (16, 2048, 128), (16, 1024, 96), (16, 4096, 96), (24, 2048, 96),
          (6, 2048, 128), (32, 2048, 128), (16, 2048, 64), (8, 4096, 128)]
DROPOUT = 0.1  # Megatron's default attention dropout


# Megatron's scaled_upper_triang_masked_softmax (megatron/fused_kernels) in Triton: one program
# per score row; it scales, applies the causal mask and normalises in registers, reading only the
# row's unmasked prefix and writing the whole row (zeros past the diagonal). The backward reads
# the prefix of the output and of its gradient and writes the whole gradient row.
@triton.jit
def _causal_softmax_fwd(x_ptr, y_ptr, s, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    q = row % s
    offs = tl.arange(0, BLOCK)
    keep = offs <= q
    x = tl.load(x_ptr + row * s + offs, mask=keep, other=-float("inf")).to(tl.float32) * scale
    x = x - tl.max(x, 0)
    e = tl.exp(x)
    y = e / tl.sum(e, 0)
    tl.store(y_ptr + row * s + offs, y.to(tl.bfloat16), mask=offs < s)


@triton.jit
def _causal_softmax_bwd(y_ptr, dy_ptr, dx_ptr, s, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    q = row % s
    offs = tl.arange(0, BLOCK)
    keep = offs <= q
    y = tl.load(y_ptr + row * s + offs, mask=keep, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * s + offs, mask=keep, other=0.0).to(tl.float32)
    dx = y * (dy - tl.sum(y * dy, 0)) * scale
    tl.store(dx_ptr + row * s + offs, dx.to(tl.bfloat16), mask=offs < s)


class CausalSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        bh, s, _ = x.shape
        y = torch.empty_like(x)
        _causal_softmax_fwd[(bh * s,)](x, y, s, scale, BLOCK=triton.next_power_of_2(s), num_warps=8)
        ctx.save_for_backward(y)
        ctx.scale = scale
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        bh, s, _ = y.shape
        dx = torch.empty_like(y)
        _causal_softmax_bwd[(bh * s,)](y, dy.contiguous(), dx, s, ctx.scale,
                                       BLOCK=triton.next_power_of_2(s), num_warps=8)
        return dx, None


def batched_gemm_rows(flush):
    """The six batched GEMMs of unfused attention, each timed alone (inputs from HBM)."""
    rows = []
    for (bh, s, d) in SHAPES:
        q = torch.randn(bh, s, d, dtype=DT, device="cuda")
        k_t = torch.randn(bh, d, s, dtype=DT, device="cuda")
        p = torch.randn(bh, s, s, dtype=DT, device="cuda")
        v = torch.randn(bh, s, d, dtype=DT, device="cuda")
        # name, (m, n, k) per batch element, callable
        cases = (
            ("qk", (s, s, d), lambda: torch.bmm(q, k_t)),                   # writes scores
            ("pv", (s, d, s), lambda: torch.bmm(p, v)),                     # reads probs
            ("pt_dout", (s, d, s), lambda: torch.bmm(p.transpose(1, 2), v)),  # dV = P^T dO
        )
        for name, (m, n, kk), fn in cases:
            t = timed(fn, flush=flush)
            rows.append({"gemm": name, "batch": bh, "m": m, "n": n, "k": kk, "time_s": t,
                         "tflops": 2.0 * bh * m * n * kk / t / 1e12})
        del q, k_t, p, v
    return rows


def softmax_check():
    """The Triton causal softmax against torch (values and gradient), before timing it."""
    x = torch.randn(4, 256, 256, dtype=torch.float32, device="cuda", requires_grad=True)
    mask = torch.ones(256, 256, device="cuda", dtype=torch.bool).triu(1)
    ref = torch.softmax((x * 0.5).masked_fill(mask, float("-inf")), dim=-1)
    got = CausalSoftmax.apply(x.to(DT), 0.5).float()
    g = torch.randn_like(ref)
    (dref,) = torch.autograd.grad(ref, x, g)
    xb = x.detach().to(DT).requires_grad_(True)
    (dgot,) = torch.autograd.grad(CausalSoftmax.apply(xb, 0.5), xb, g.to(DT))
    return {"max_abs_err": float((got - ref).abs().max()),
            "max_abs_grad_err": float((dgot.float() - dref).abs().max())}


def core_attention_rows(flush):
    rows = []
    for (bh, s, d) in SHAPES:
        for dropout in (DROPOUT, 0.0):
            q = torch.randn(bh, s, d, dtype=DT, device="cuda", requires_grad=True)
            k = torch.randn(bh, s, d, dtype=DT, device="cuda", requires_grad=True)
            v = torch.randn(bh, s, d, dtype=DT, device="cuda", requires_grad=True)
            out = torch.empty(bh, s, s, dtype=DT, device="cuda")
            go = torch.randn(bh, s, d, dtype=DT, device="cuda")
            alpha = 1.0 / math.sqrt(d)

            for softmax in ("torch", "megatron_causal"):
                def fwd():
                    if softmax == "torch":
                        scores = torch.baddbmm(out, q, k.transpose(1, 2), beta=0.0, alpha=alpha)
                        probs = torch.softmax(scores, dim=-1)
                    else:  # Megatron: the GEMM writes raw scores, the fused kernel scales and masks
                        scores = torch.baddbmm(out, q, k.transpose(1, 2), beta=0.0, alpha=1.0)
                        probs = CausalSoftmax.apply(scores, alpha)
                    if dropout > 0:
                        probs = F.dropout(probs, p=dropout, training=True)
                    return torch.bmm(probs, v)

                def fwd_bwd():
                    torch.autograd.grad(fwd(), (q, k, v), go)

                with torch.no_grad():
                    t_f = timed(fwd, flush=flush)
                t_fb = timed(fwd_bwd, flush=flush)
                rows.append({"softmax": softmax, "batch_heads": bh, "seq": s, "head_dim": d,
                             "dropout": dropout, "fwd_time_s": t_f, "fwd_bwd_time_s": t_fb,
                             "bwd_time_s": t_fb - t_f, "score_bytes": 2 * bh * s * s})
            del q, k, v, out, go
    return rows


def main():
    out, t0 = start_measurement()
    flush = make_flush()
    result = {
        **device_info(),
        "method": "median of 12 samples after warm-up, back-to-back launches, 512 MiB L2 flush "
                  "before each call with its own time subtracted (gemm_attention_h200.timed)",
        "triton": triton.__version__,
        "softmax_check": softmax_check(),
        "core_attention": core_attention_rows(flush),
        "batched_gemm": batched_gemm_rows(flush),
    }
    write_measurement(result, out, t0)
    print(json.dumps(result["softmax_check"]))
    print(json.dumps(result["core_attention"][:4], indent=1))


if __name__ == "__main__":
    main()
