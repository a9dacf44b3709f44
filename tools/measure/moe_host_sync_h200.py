#!/usr/bin/env python3
"""Measure what a per-layer host synchronisation costs an eager MoE training layer, and how
fast the host issues an MoE layer's kernels (issue 26: Megatron-Core's dropless all-to-all
dispatcher copies the per-expert token counts to the host before the dispatch,
token_dispatcher.py `_maybe_dtoh_and_synchronize`, so the CPU cannot run ahead of the GPU
across that point; with `moe_pad_expert_input_to_capacity` it does not).

The layer is one EP rank's share of a Qwen3-30B-A3B layer (hidden 2048, 32 heads of 128, 4 KV
heads, 128 routed experts of width 768, top-8, 16 local experts as at EP 8), written as
Megatron-Core's modules do it, in eager PyTorch with autograd, BF16: RMSNorm, QKV, RoPE, SDPA
(flash), projection, residual; RMSNorm, router GEMM, softmax, top-k, token counts, permute
(argsort + index_select), the EP all-to-all stood in for by a copy of the routed rows (one GPU),
grouped FC1 (torch._grouped_mm), SwiGLU, grouped FC2, the copy back, unpermute (weighted
index_add), residual.

Variants, each a stack of LAYERS layers timed forward and forward+backward:
  nosync   the counts stay on the device;
  sync     `tokens_per_expert.tolist()` before the dispatch (the dropless dispatcher's sync).
Token counts per micro-batch: 4096 (one sequence of 4096) and 8192, and 128 (the GPU work is
tiny: the host-bound time, i.e. how fast the host issues the layer). Kernels per layer forward
and backward are counted with torch.profiler.

Timing: wall-clock per step (torch.cuda.synchronize() before and after the stack), median of
REPS after WARM warm-ups, divided by LAYERS. Writes JSON to --out.
    python3 tools/measure/moe_host_sync_h200.py --out bench/data/h200-moe-host-sync.json

STATUS: run on two lent H100 80GB HBM3 hosts (torch 2.11 / CUDA 13.0): bench/data/h100-moe-host-sync.json
(16.3 us a launch at 128 tokens, the hardware profiles' host_dispatch_s) and, on 2026-12-06 beside
tools/measure/mcore_moe_host_time.py on the same host, bench/data/h100-moe-host-sync-host2.json
(28.0-28.8 us a launch: lent hosts differ by 1.8x). Not yet run on an H200.
"""
import statistics
import time

import torch
import torch.nn.functional as F

from gemm_attention_h200 import count_cuda_kernels, device_info, start_measurement, write_measurement

DEV, DT = "cuda", torch.bfloat16
H, HEADS, KV, D = 2048, 32, 4, 128
EXPERTS, TOPK, LOCAL, FFN = 128, 8, 16, 768
LAYERS, WARM, REPS = 8, 3, 9
GMM = getattr(F, "grouped_mm", None) or torch._grouped_mm


def rms_norm(x, w):
    return F.rms_norm(x, (x.shape[-1],), w, 1e-6)


def rope(x, cos, sin):
    x1, x2 = x[..., : D // 2], x[..., D // 2:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class MoELayer(torch.nn.Module):
    def __init__(self, sync):
        super().__init__()
        p = lambda *s: torch.nn.Parameter(torch.randn(*s, device=DEV, dtype=DT) * 0.02)
        self.sync = sync
        self.n1, self.n2 = p(H), p(H)
        self.qkv, self.proj = p((HEADS + 2 * KV) * D, H), p(H, HEADS * D)
        self.router = p(EXPERTS, H)
        self.fc1, self.fc2 = p(LOCAL, 2 * FFN, H), p(LOCAL, H, FFN)  # [E, out, in] as TE keeps them

    def attention(self, x, cos, sin):
        t = x.shape[0]
        qkv = F.linear(rms_norm(x, self.n1), self.qkv)
        q, k, v = qkv.split([HEADS * D, KV * D, KV * D], dim=-1)
        q = rope(q.view(t, HEADS, D), cos, sin).transpose(0, 1)
        k = rope(k.view(t, KV, D), cos, sin).transpose(0, 1)
        v = v.view(t, KV, D).transpose(0, 1)
        o = F.scaled_dot_product_attention(q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0),
                                           is_causal=True, enable_gqa=True)
        return x + F.linear(o.squeeze(0).transpose(0, 1).reshape(t, HEADS * D), self.proj)

    def moe(self, x):
        t = x.shape[0]
        h = rms_norm(x, self.n2)
        probs = torch.softmax(F.linear(h, self.router).float(), dim=-1)
        w, idx = torch.topk(probs, TOPK, dim=-1)
        w = (w / w.sum(-1, keepdim=True)).to(DT)
        local = (idx % LOCAL).flatten()       # one GPU: every routed copy lands on a local expert
        # scatter_add, not bincount: bincount copies its max to the host (a sync of its own)
        counts = torch.zeros(LOCAL, device=DEV, dtype=torch.int64).scatter_add_(
            0, local, torch.ones_like(local))
        if self.sync:
            counts.tolist()                     # the dropless dispatcher's device-to-host copy
        order = torch.argsort(local, stable=True)
        rows = h.index_select(0, order // TOPK)
        rows = rows.clone()                     # stands in for the EP all-to-all's receive buffer
        offs = torch.cumsum(counts, 0).to(torch.int32)
        a = GMM(rows, self.fc1.transpose(-2, -1), offs=offs)
        g, u = a.chunk(2, dim=-1)
        y = GMM(F.silu(g) * u, self.fc2.transpose(-2, -1), offs=offs)
        y = y.clone() * w.flatten()[order].unsqueeze(-1)
        out = torch.zeros_like(h).index_add(0, order // TOPK, y)
        return x + out

    def forward(self, x, cos, sin):
        return self.moe(self.attention(x, cos, sin))


def rope_tables(t):
    pos = torch.arange(t, device=DEV, dtype=torch.float32).unsqueeze(1)
    inv = 1.0 / (10000 ** (torch.arange(0, D // 2, device=DEV, dtype=torch.float32) / (D // 2)))
    ang = (pos * inv).unsqueeze(1)
    return ang.cos().to(DT), ang.sin().to(DT)


def time_stack(stack, x, cos, sin, backward):
    """Median per-layer seconds: (wall time of the step, time at which the host had issued it)."""
    samples, issued = [], []
    for i in range(WARM + REPS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        y = x
        for layer in stack:
            y = layer(y, cos, sin)
        if backward:
            y.backward(torch.ones_like(y))
        t_issue = time.perf_counter()
        torch.cuda.synchronize()
        if i >= WARM:
            samples.append((time.perf_counter() - t0) / len(stack))
            issued.append((t_issue - t0) / len(stack))
        for layer in stack:
            layer.zero_grad(set_to_none=True)
    return statistics.median(samples), statistics.median(issued)


def count_kernels(layer, x, cos, sin):
    """CUDA kernels (and memcpys) one layer launches forward and forward+backward."""
    def fwd_bwd():
        y = layer(x, cos, sin)
        y.backward(torch.ones_like(y))
    out = {"forward": count_cuda_kernels(lambda: layer(x, cos, sin)), "forward_backward": count_cuda_kernels(fwd_bwd)}
    layer.zero_grad(set_to_none=True)
    return out


def main():
    out, t0 = start_measurement()
    torch.manual_seed(0)
    res = {**device_info(), "layers": LAYERS, "warm": WARM, "reps": REPS,
           "shape": dict(hidden=H, heads=HEADS, kv_heads=KV, head_dim=D, experts=EXPERTS,
                         topk=TOPK, local_experts=LOCAL, expert_ffn=FFN),
           "method": __doc__, "rows": []}
    for tokens in (128, 4096, 8192):
        x = torch.randn(tokens, H, device=DEV, dtype=DT, requires_grad=True)
        cos, sin = rope_tables(tokens)
        for sync in (False, True):
            stack = [MoELayer(sync) for _ in range(LAYERS)]
            f, fi = time_stack(stack, x, cos, sin, False)
            fb, fbi = time_stack(stack, x, cos, sin, True)
            row = {"tokens": tokens, "variant": "sync" if sync else "nosync",
                   "forward_s": f, "forward_host_issued_s": fi,
                   "forward_backward_s": fb, "forward_backward_host_issued_s": fbi}
            row["kernels"] = count_kernels(stack[0], x, cos, sin)
            res["rows"].append(row)
            print(row, flush=True)
            del stack
            torch.cuda.empty_cache()
    write_measurement(res, out, t0)


if __name__ == "__main__":
    main()
