#!/usr/bin/env python3
"""How much slower does each kind of kernel run inside a training loop that keeps the GPU at its
power cap than in the short bursts megasim's kernel rates were timed in? Hopper SXM boards are
capped at 700 W; sustained_clock_h200.py showed the cap binding within a second of dense work
(SM clock ~1,490 MHz in a BF16 layer loop, ~1,350 MHz in an FP8 GEMM loop, 1,980 MHz idle).

The workload is a stack of 2 layer shards of llama_layer_h200.py's shapes (default: Llama 3.1
70B at TP 4, CP 2: hidden 8192, 16 local query heads, 2 KV heads, SwiGLU FFN 7168 local, 4096
tokens; --runs picks shapes and precisions), run in BF16 and in an FP8 proxy of Transformer Engine's recipe: every linear casts its input and
activation and output gradient to E4M3 once (weights once, both layouts, as TE caches them across
micro-batches) and runs torch._scaled_mm (cuBLASLt FP8) for fprop, dgrad and wgrad, with one
transpose where TE's fused cast-transpose makes it; attention (cuDNN SDPA) and norms stay BF16. Every GEMM
and the attention forward and backward are wrapped in CUDA events, so kernel time by kind is
read inside the loop without draining it.

Timing: per precision, 10 s idle; a burst of 10 steps with a synchronize between steps (the
fit harness's regime); then steps back to back for SUSTAIN_S seconds, every 5th step's events
read three steps in arrears. Ratio per kind: median over the last third of the sustained steps
over the burst median (the file keeps the sustained samples as medians per 5 s, the clock log
per 1 s). nvidia-smi logs SM clock, power and temperature every 200 ms.
    python3 tools/measure/sustained_layer_h200.py --out bench/data/h200-sustained-layer.json
    python3 tools/measure/sustained_layer_h200.py --out bench/data/h200-sustained-layer-8b-15b.json \
        --runs llama3.1-8b_tp1_cp2/bf16,nemotron4-15b_tp4_mb4/bf16
"""
import argparse
import statistics
import sys
import time

import torch
import torch.nn.attention
import torch.nn.functional as F

from gemm_attention_h200 import device_info, start_measurement, write_measurement
from llama_layer_h200 import DEV, SHAPES, relu2, rms_norm, swiglu
from sustained_clock_h200 import per_window, read_clock_log, start_clock_log

SUSTAIN_S, IDLE_S, LAYERS, BURST, EVERY = 60.0, 10.0, 2, 10, 5
BF16, E4M3 = torch.bfloat16, torch.float8_e4m3fn
ONE = None  # unit FP8 scale, a float32 scalar on the GPU (set in main)


class Recorder:
    """CUDA event pairs by kernel kind for the current step (None: not recording)."""

    def __init__(self):
        self.step = None

    def span(self, kind):
        if self.step is None:
            return None
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        self.step.append((kind, a, b))
        return b


REC = Recorder()


def timed_call(kind, fn):
    end = REC.span(kind)
    out = fn()
    if end is not None:
        end.record()
    return out


def col_major(t):
    return t.t().contiguous().t()


class Linear(torch.autograd.Function):
    """y = x w^T in BF16 (torch.mm) or, given the weight's FP8 copies, in FP8 (E4M3 operands,
    unit scales, BF16 output). As in Transformer Engine the weight is cast once (both layouts)
    and reused across micro-batches, and each activation or gradient is cast once and
    transposed once for the weight-gradient GEMM."""

    @staticmethod
    def forward(ctx, x, w, w8, w8c):
        if w8 is not None:
            x8 = x.to(E4M3)
            ctx.save_for_backward(col_major(x8), w8c)
            ctx.fp8 = True
            return timed_call("fprop", lambda: torch._scaled_mm(x8, w8.t(), ONE, ONE, out_dtype=BF16))
        ctx.save_for_backward(x, w)
        ctx.fp8 = False
        return timed_call("fprop", lambda: torch.mm(x, w.t()))

    @staticmethod
    def backward(ctx, g):
        if ctx.fp8:
            x8c, w8c = ctx.saved_tensors
            g8 = g.to(E4M3)
            g8t = g8.t().contiguous()
            dx = timed_call("dgrad", lambda: torch._scaled_mm(g8, w8c, ONE, ONE, out_dtype=BF16))
            dw = timed_call("wgrad", lambda: torch._scaled_mm(g8t, x8c, ONE, ONE, out_dtype=BF16))
        else:
            x, w = ctx.saved_tensors
            dx = timed_call("dgrad", lambda: torch.mm(g, w))
            dw = timed_call("wgrad", lambda: torch.mm(g.t(), x))
        return dx, dw, None, None


class Attention(torch.autograd.Function):
    """cuDNN SDPA, causal, native GQA; forward and backward timed as one span each."""

    @staticmethod
    def forward(ctx, q, k, v):
        with torch.enable_grad():
            q_, k_, v_ = (t.detach().requires_grad_() for t in (q, k, v))
            with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.CUDNN_ATTENTION):
                o = timed_call("attn_fwd", lambda: F.scaled_dot_product_attention(
                    q_, k_, v_, is_causal=True, enable_gqa=True))
        ctx.graph = (o, q_, k_, v_)
        return o.detach()

    @staticmethod
    def backward(ctx, go):
        o, q_, k_, v_ = ctx.graph
        return timed_call("attn_bwd", lambda: torch.autograd.grad(o, (q_, k_, v_), go))


class Shard(torch.nn.Module):
    def __init__(self, h, heads, kv, d, ffn, tokens, gated, fp8, batch=1):
        super().__init__()
        self.n, self.kv, self.d, self.s, self.b, self.gated = heads, kv, d, tokens, batch, gated
        self.w1 = torch.nn.Parameter(torch.ones(h, device=DEV, dtype=BF16))
        self.w2 = torch.nn.Parameter(torch.ones(h, device=DEV, dtype=BF16))

        def weight(o, i):
            return torch.nn.Parameter(torch.randn(o, i, device=DEV, dtype=BF16) * i ** -0.5)
        self.qkv, self.proj = weight((heads + 2 * kv) * d, h), weight(h, heads * d)
        self.fc1, self.fc2 = weight((2 if gated else 1) * ffn, h), weight(h, ffn)
        self.w8 = {}
        if fp8:
            for name in ("qkv", "proj", "fc1", "fc2"):
                w8 = getattr(self, name).detach().to(E4M3)
                self.w8[name] = (w8, col_major(w8))

    def lin(self, x, name):
        w8, w8c = self.w8.get(name, (None, None))
        return Linear.apply(x, getattr(self, name), w8, w8c)

    def forward(self, x):
        n, kv, d, s, b = self.n, self.kv, self.d, self.s, self.b
        y = self.lin(rms_norm(x, self.w1), "qkv").view(b, s, n + 2 * kv, d)
        q, k, v = (y[:, :, i:j].transpose(1, 2) for i, j in ((0, n), (n, n + kv), (n + kv, n + 2 * kv)))
        a = Attention.apply(q, k, v).transpose(1, 2).reshape(b * s, n * d)
        x = x + self.lin(a, "proj")
        hdn = self.lin(rms_norm(x, self.w2), "fc1")
        return x + self.lin(swiglu(hdn) if self.gated else relu2(hdn), "fc2")


def step(stack, x, dy):
    ev = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
    ev[0].record()
    stack(x).backward(dy)
    ev[1].record()
    stack.zero_grad(set_to_none=True)
    x.grad = None
    return ev


def summarise(ev, spans):
    """Seconds per kind of kernel (summed over the step) and the whole step."""
    ev[1].synchronize()
    out = {"step": ev[0].elapsed_time(ev[1]) / 1e3}
    for kind, a, b in spans:
        out[kind] = out.get(kind, 0.0) + a.elapsed_time(b) / 1e3
    return out


def run(shape_name, fp8, clock_t0):
    shape = SHAPES[shape_name]
    torch.manual_seed(0)
    stack = torch.nn.Sequential(*[Shard(**shape, fp8=fp8) for _ in range(LAYERS)])
    tokens = shape.get("batch", 1) * shape["tokens"]
    x = torch.randn(tokens, shape["h"], device=DEV, dtype=BF16, requires_grad=True)
    dy = torch.randn(tokens, shape["h"], device=DEV, dtype=BF16)
    for _ in range(3):
        step(stack, x, dy)
    torch.cuda.synchronize()
    time.sleep(IDLE_S)
    burst = []
    for _ in range(BURST):
        REC.step = []
        ev = step(stack, x, dy)
        burst.append({"t_s": round(time.time() - clock_t0, 3), **summarise(ev, REC.step)})
        REC.step = None
    sustained, pending, i = [], [], 0
    end = time.time() + SUSTAIN_S
    while time.time() < end:
        REC.step = [] if i % EVERY == 0 else None
        ev = step(stack, x, dy)
        if REC.step is not None:
            pending.append((i, ev, REC.step))
        REC.step = None
        i += 1
        while pending and pending[0][0] <= i - 3:  # three steps stay queued behind the one read
            _, ev0, spans0 = pending.pop(0)
            sustained.append({"t_s": round(time.time() - clock_t0, 3), **summarise(ev0, spans0)})
    for _, ev0, spans0 in pending:
        sustained.append({"t_s": round(time.time() - clock_t0, 3), **summarise(ev0, spans0)})
    kinds = [k for k in burst[0] if k != "t_s"]
    tail = sustained[len(sustained) * 2 // 3:]
    ratio = {k: statistics.median(r[k] for r in tail) / statistics.median(r[k] for r in burst) for k in kinds}
    burst_med = {k: statistics.median(r[k] for r in burst) for k in kinds}
    del stack, x, dy
    torch.cuda.empty_cache()
    return {"burst": burst, "sustained_per_5s": per_window(sustained), "burst_median_s": burst_med,
            "sustained_over_burst_time": ratio, "steps_run": i}


def main():
    global ONE
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--runs", default="llama3.1-70b_tp4_cp2/bf16,llama3.1-70b_tp4_cp2/fp8",
                    help="comma-separated SHAPE/PRECISION pairs; SHAPE from llama_layer_h200.SHAPES")
    mine, rest = ap.parse_known_args()
    sys.argv = [sys.argv[0]] + rest
    runs = [r.split("/") for r in mine.runs.split(",")]
    for shape_name, prec in runs:
        if shape_name not in SHAPES or prec not in ("bf16", "fp8"):
            raise SystemExit(f"--runs: unknown shape or precision in {shape_name}/{prec}")
    out, t0 = start_measurement()
    ONE = torch.ones((), device=DEV)
    smi, log_path = start_clock_log()
    res = {**device_info(), "method": __doc__.split("Timing: ")[1].split("\n    python3")[0],
           "layers": LAYERS, "shapes": {name: SHAPES[name] for name, _ in runs}, "runs": {}}
    for shape_name, prec in runs:
        key = f"{shape_name}/{prec}"
        res["runs"][key] = run(shape_name, prec == "fp8", t0)
        print(key, res["runs"][key]["burst_median_s"], res["runs"][key]["sustained_over_burst_time"], flush=True)
    res["clock_log"] = per_window(read_clock_log(smi, log_path, t0), 1.0)
    write_measurement(res, out, t0)


if __name__ == "__main__":
    main()
