#!/usr/bin/env python3
"""Forward and backward time of one Llama-style transformer layer shard (RMSNorm, grouped-query
attention, SwiGLU MLP, no dropout), kernels only (no TP/CP communication), eager PyTorch bf16 on
one GPU; the attention core runs through SDPA with one backend forced: cuDNN (what Transformer
Engine selects on Hopper) or FlashAttention-2. RMSNorm and SwiGLU are compiled with torch.compile
so each is one fused kernel, as Transformer Engine's are. RoPE is left out (Transformer Engine fuses it into one small kernel per tensor;
leave megasim's rope/rope_bwd kernels out of the kernel sum when comparing).

Purpose: a layer-level check of megasim's kernel sum for the DGX Cloud transfer suites' layer
shapes (Llama 3.1 8B at TP 1, 70B at TP 4, 405B at TP 8, Nemotron-4 15B at TP 4, each with the
tokens one CP rank holds), and the cost of Megatron's gradient-accumulation fusion: the
weight-gradient GEMM accumulating into an FP32 main_grad (cuBLAS beta = 1, FP32 C/D) instead of
writing a BF16 gradient, timed per GEMM shape. That wgrad column times an out-of-place
torch.addmm, which writes a new FP32 tensor and costs about 2.5x the in-place accumulation the
frameworks run; fp8_main_grad_h200.py times the in-place one through cuBLASLt and supersedes it.

Timing: a stack of 2 layers; CUDA events around the stack's forward and around its backward;
median of 10 timed steps after 3 warm-ups, per layer. GEMMs: as gemm_attention_h200.py.
    python3 tools/measure/llama_layer_h200.py --out bench/data/h200-llama-layer.json
"""
import statistics

import torch
import torch.nn.attention
import torch.nn.functional as F

from gemm_attention_h200 import DT, device_info, start_measurement, timed, write_measurement
from layer_fwd_bwd_h200 import time_stack_fwd_bwd

DEV = "cuda"
LAYERS, WARM, REPS = 2, 3, 10
# name: hidden, local query heads, local kv heads, head_dim, local ffn, tokens, gated, norm
SHAPES = {
    "llama3.1-8b_tp1_cp2": dict(h=4096, heads=32, kv=8, d=128, ffn=14336, tokens=4096, gated=True),
    "llama3.1-70b_tp4_cp2": dict(h=8192, heads=16, kv=2, d=128, ffn=7168, tokens=4096, gated=True),
    "llama3.1-405b_tp8_cp2": dict(h=16384, heads=16, kv=1, d=128, ffn=6656, tokens=4096, gated=True),
    "nemotron4-15b_tp4_mb4": dict(h=6144, heads=12, kv=2, d=128, ffn=6144, tokens=4096, batch=4, gated=False),
}


@torch.compile
def rms_norm(x, w):
    return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * w


@torch.compile
def swiglu(gu):
    g, u = gu.chunk(2, dim=-1)
    return F.silu(g) * u


@torch.compile
def relu2(x):
    return torch.square(F.relu(x))


class LlamaShard(torch.nn.Module):
    def __init__(self, h, heads, kv, d, ffn, tokens, gated, batch=1):
        super().__init__()
        self.heads, self.kv, self.d, self.batch, self.seq, self.gated = heads, kv, d, batch, tokens, gated
        self.w1 = torch.nn.Parameter(torch.ones(h, device=DEV, dtype=DT))
        self.w2 = torch.nn.Parameter(torch.ones(h, device=DEV, dtype=DT))
        self.qkv = torch.nn.Linear(h, (heads + 2 * kv) * d, bias=False, device=DEV, dtype=DT)
        self.proj = torch.nn.Linear(heads * d, h, bias=False, device=DEV, dtype=DT)
        self.fc1 = torch.nn.Linear(h, (2 if gated else 1) * ffn, bias=False, device=DEV, dtype=DT)
        self.fc2 = torch.nn.Linear(ffn, h, bias=False, device=DEV, dtype=DT)
        self.backend = None
        self.expand_kv = False

    def forward(self, x):  # x: [batch * seq, h]
        b, s, n, kv, d = self.batch, self.seq, self.heads, self.kv, self.d
        y = self.qkv(rms_norm(x, self.w1)).view(b, s, n + 2 * kv, d)
        q = y[:, :, :n].transpose(1, 2)
        k = y[:, :, n:n + kv].transpose(1, 2)
        v = y[:, :, n + kv:].transpose(1, 2)
        with torch.nn.attention.sdpa_kernel(self.backend):
            if self.expand_kv:  # the backend has no native GQA: repeat K/V per query group
                k, v = k.repeat_interleave(n // kv, dim=1), v.repeat_interleave(n // kv, dim=1)
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b * s, n * d))
        hdn = self.fc1(rms_norm(x, self.w2))
        return x + self.fc2(swiglu(hdn) if self.gated else relu2(hdn))


def time_layer(shape, backend, expand_kv=False):
    torch.manual_seed(0)
    stack = torch.nn.Sequential(*[LlamaShard(**shape) for _ in range(LAYERS)])
    for layer in stack:
        layer.backend = backend
        layer.expand_kv = expand_kv
    tokens = shape.get("batch", 1) * shape["tokens"]
    x = torch.randn(tokens, shape["h"], device=DEV, dtype=DT, requires_grad=True)
    dy = torch.randn(tokens, shape["h"], device=DEV, dtype=DT)
    fwd, bwd = time_stack_fwd_bwd(stack, x, dy, LAYERS, WARM, REPS)
    del stack, x, dy
    return {"forward_s": statistics.median(fwd), "backward_s": statistics.median(bwd), "expand_kv": expand_kv}


def wgrad_rows(shape):
    """Weight-gradient GEMMs of the shard: dW[out, in] = dY^T[out, tokens] X[tokens, in], timed
    writing BF16 (autograd) and accumulating into FP32 (Megatron's gradient-accumulation fusion)."""
    tokens = shape.get("batch", 1) * shape["tokens"]
    h, n, kv, d, ffn = shape["h"], shape["heads"], shape["kv"], shape["d"], shape["ffn"]
    linears = {"qkv": ((n + 2 * kv) * d, h), "proj": (h, n * d),
               "fc1": ((2 if shape["gated"] else 1) * ffn, h), "fc2": (h, ffn)}
    rows = []
    for name, (out_f, in_f) in linears.items():
        dyt = torch.randn(out_f, tokens, device=DEV, dtype=DT)
        xx = torch.randn(tokens, in_f, device=DEV, dtype=DT)
        g16 = torch.empty(out_f, in_f, device=DEV, dtype=DT)
        g32 = torch.zeros(out_f, in_f, device=DEV, dtype=torch.float32)
        t16 = timed(lambda: torch.mm(dyt, xx, out=g16))
        try:
            t32 = timed(lambda: torch.addmm(g32, dyt, xx, out_dtype=torch.float32))
            err = None
        except (RuntimeError, TypeError) as e:
            t32, err = None, str(e)[:200]
        flops = 2.0 * out_f * in_f * tokens
        rows.append({"linear": name, "m": out_f, "n": in_f, "k": tokens, "bf16_out_time_s": t16,
                     "fp32_accumulate_time_s": t32, "bf16_tflops": flops / t16 / 1e12,
                     "fp32_accumulate_tflops": flops / t32 / 1e12 if t32 else None, "error": err})
        del dyt, xx, g16, g32
    return rows


def main():
    out, t0 = start_measurement()
    res = {**device_info(), "method": __doc__.split("Timing: ")[1].split("\n    python3")[0],
           "layers": {}, "wgrad": {}}
    backends = {"cudnn": torch.nn.attention.SDPBackend.CUDNN_ATTENTION,
                "flash": torch.nn.attention.SDPBackend.FLASH_ATTENTION}
    for name, shape in SHAPES.items():
        res["layers"][name] = {**shape}
        for bname, backend in backends.items():
            try:
                res["layers"][name][bname] = time_layer(shape, backend)
            except RuntimeError as e:
                print(name, bname, "native GQA failed, expanding K/V:", str(e)[:200], flush=True)
                try:
                    res["layers"][name][bname] = time_layer(shape, backend, expand_kv=True)
                except RuntimeError as e2:
                    res["layers"][name][bname] = {"error": str(e2)[:300]}
        res["wgrad"][name] = wgrad_rows(shape)
        print(name, res["layers"][name], res["wgrad"][name], flush=True)
    write_measurement(res, out, t0)


if __name__ == "__main__":
    main()
