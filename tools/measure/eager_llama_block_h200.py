#!/usr/bin/env python3
"""Measure a Llama 3 8B block as torchtitan writes it, eager and compiled (issue 28.1: megasim
reads torchtitan's published Llama 3 8B FSDP run 58% fast). torchtitan's block
(torchtitan/models/llama3/model.py): RMSNorm as x.float() * rsqrt(mean(x^2) + eps), cast back,
times the weight; fused QKV projections; RoPE by complex multiplication in FP32
(view_as_complex / view_as_real); causal SDPA with 8 KV heads repeated to 32; output projection;
RMSNorm; SwiGLU feed-forward w2(silu(w1 x) * w3 x); residual adds. BF16 parameters (FSDP2's
param_dtype), 2 sequences of 8,192 tokens (the recipe's local batch 2 at sequence 8192).

Variants, each a stack of LAYERS blocks, forward then backward with a fixed output gradient:
  eager     the modules as written (one kernel per PyTorch op);
  fused     the same with torch's fused F.rms_norm and F.silu * mul unchanged (the norm only);
  compile   the eager block through torch.compile (default mode).

Timing: CUDA events around the stack's forward and backward, median of REPS steps after WARM
warm-ups, divided by LAYERS; kernels per block forward and forward+backward counted with
torch.profiler on one eager block. Writes JSON to --out.
    python3 tools/measure/eager_llama_block_h200.py --out bench/data/h100-eager-llama-block.json

STATUS: run once, on an H100 80GB HBM3 (the lent machine, torch 2.11 / CUDA 13.0), stored as
bench/data/h100-eager-llama-block.json.
"""
import statistics

import torch
import torch.nn.functional as F

from gemm_attention_h200 import count_cuda_kernels, device_info, start_measurement, write_measurement
from layer_fwd_bwd_h200 import Stack, time_stack_fwd_bwd

DEV, DT = "cuda", torch.bfloat16
H, HEADS, KV, D, FFN = 4096, 32, 8, 128, 14336
BATCH, SEQ = 2, 8192
LAYERS, WARM, REPS = 4, 3, 10


def rms_norm_eager(x, w, eps=1e-5):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).type_as(x) * w


def rope_complex(x, freqs):
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * freqs).flatten(3).type_as(x)


class Block(torch.nn.Module):
    def __init__(self, fused_norm):
        super().__init__()
        p = lambda *s: torch.nn.Parameter(torch.randn(*s, device=DEV, dtype=DT) * 0.02)
        self.fused_norm = fused_norm
        self.n1, self.n2 = torch.nn.Parameter(torch.ones(H, device=DEV, dtype=DT)), torch.nn.Parameter(
            torch.ones(H, device=DEV, dtype=DT))
        self.wq, self.wk, self.wv, self.wo = p(HEADS * D, H), p(KV * D, H), p(KV * D, H), p(H, HEADS * D)
        self.w1, self.w3, self.w2 = p(FFN, H), p(FFN, H), p(H, FFN)

    def norm(self, x, w):
        return F.rms_norm(x, (H,), w, 1e-5) if self.fused_norm else rms_norm_eager(x, w)

    def forward(self, x, freqs):
        b, s, _ = x.shape
        h = self.norm(x, self.n1)
        q = F.linear(h, self.wq).view(b, s, HEADS, D)
        k = F.linear(h, self.wk).view(b, s, KV, D)
        v = F.linear(h, self.wv).view(b, s, KV, D)
        q, k = rope_complex(q, freqs), rope_complex(k, freqs)
        k = k.repeat_interleave(HEADS // KV, dim=2)
        v = v.repeat_interleave(HEADS // KV, dim=2)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + F.linear(o.transpose(1, 2).reshape(b, s, HEADS * D), self.wo)
        h = self.norm(x, self.n2)
        return x + F.linear(F.silu(F.linear(h, self.w1)) * F.linear(h, self.w3), self.w2)


def freqs_cis():
    inv = 1.0 / (500000.0 ** (torch.arange(0, D, 2, device=DEV, dtype=torch.float32) / D))
    ang = torch.outer(torch.arange(SEQ, device=DEV, dtype=torch.float32), inv)
    return torch.polar(torch.ones_like(ang), ang).view(1, SEQ, 1, D // 2)


def count_kernels(block, x, dy, freqs):
    """CUDA kernels one block launches forward and forward+backward."""
    out = {"forward": count_cuda_kernels(lambda: block(x, freqs)),
           "forward_backward": count_cuda_kernels(lambda: block(x, freqs).backward(dy))}
    block.zero_grad(set_to_none=True)
    return out


def main():
    out, t0 = start_measurement()
    torch.manual_seed(0)
    res = {**device_info(), "layers": LAYERS, "warm": WARM, "reps": REPS,
           "shape": dict(hidden=H, heads=HEADS, kv_heads=KV, head_dim=D, ffn=FFN, batch=BATCH, seq=SEQ),
           "method": __doc__, "rows": []}
    freqs = freqs_cis()
    x = torch.randn(BATCH, SEQ, H, device=DEV, dtype=DT, requires_grad=True)
    dy = torch.randn_like(x)
    for variant in ("eager", "fused", "compile"):
        blocks = [Block(fused_norm=variant == "fused") for _ in range(LAYERS)]
        eager_block = blocks[0]
        if variant == "compile":
            blocks = [torch.compile(m) for m in blocks]
        try:
            f, b = time_stack_fwd_bwd(Stack(blocks, args=(freqs,)), x, dy, LAYERS, WARM, REPS)
            row = {"variant": variant, "forward_s": statistics.median(f), "backward_s": statistics.median(b)}
            if variant != "compile":
                row["kernels"] = count_kernels(eager_block, x, dy, freqs)
        except Exception as e:  # noqa: BLE001 - record what failed and go on
            row = {"variant": variant, "error": repr(e)[:300]}
        res["rows"].append(row)
        print(row, flush=True)
        del blocks, eager_block
        torch.cuda.empty_cache()
    write_measurement(res, out, t0)


if __name__ == "__main__":
    main()
