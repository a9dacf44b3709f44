#!/usr/bin/env python3
"""Measure FP8 GEMM rates beside BF16 ones on one Hopper GPU, for the `gemm_fp8` block of
megasim's Hopper profile (configs/hw/hopper.json).

FP8 GEMMs are what Transformer Engine runs for every linear layer in fp8 training: E4M3
operands with per-tensor scales, BF16 output (torch._scaled_mm calls the same cuBLASLt FP8
kernels; Hopper's FP8 tensor-core GEMM takes the second operand column-major, as TE arranges
it). The shapes are gemm_attention_h200.py's transformer, wgrad and grid sets with every
dimension a multiple of 16 (an FP8 GEMM requirement); each shape is timed in BF16 and in FP8
in the same run, so the FP8/BF16 ratio is free of clock and driver differences. A "suite" set adds
the forward, dgrad and wgrad GEMMs of the largest runs of the FP8 transfer suite.

Also timed: the BF16 -> FP8 cast of an activation (one read of 2 bytes, one write of 1 byte
per element), the memory-bound kernel TE adds per linear, to check that megasim's
element-wise bandwidth fraction covers it.

    python3 tools/measure/fp8_gemm_h200.py --out bench/data/h200-fp8-gemm.json
"""
import time

import torch

from gemm_attention_h200 import (REPS, device_info, gemm_shapes, make_flush, start_measurement, timed,
                                 write_measurement)

BF16 = torch.bfloat16
FP8 = torch.float8_e4m3fn


def layer_shapes(tokens, n_k):
    """Forward, dgrad and wgrad GEMMs of a layer's linears, given each linear's (n, k) and the
    tokens per micro-batch: fprop (T, n, k), dgrad (T, k, n), wgrad (k, n, T)."""
    out = []
    for (n, k) in n_k:
        out += [(tokens, n, k), (tokens, k, n), (k, n, tokens)]
    return out


def suite_shapes():
    """The linears of the FP8 transfer suite's largest runs (configs/validation/
    nvidia-dgxc-h100-fp8.json): qkv, attention projection, fc1, fc2 per TP rank."""
    return (layer_shapes(2048, ((9216, 12288), (12288, 3072), (12288, 12288), (12288, 12288)))    # GPT-3 175B TP4
            + layer_shapes(4096, ((2560, 8192), (8192, 2048), (14336, 8192), (8192, 7168)))    # Llama 3.1 70B TP4 CP2
            + layer_shapes(4096, ((2304, 16384), (16384, 2048), (13312, 16384), (16384, 6656))))  # 405B TP8 CP2


def fp8_shapes():
    shapes = []
    seen = set()
    base = gemm_shapes()
    sets = {**{t: base[t] for t in ("square", "transformer", "wgrad", "grid")}, "suite": suite_shapes()}
    for tag, lst in sets.items():
        for (m, n, k) in lst:
            if m % 16 == 0 and n % 16 == 0 and k % 16 == 0 and (m, n, k) not in seen:
                seen.add((m, n, k))
                shapes.append((tag, m, n, k))
    return shapes


def gemm_pair(m, n, k):
    """Seconds per BF16 GEMM and per FP8 GEMM of one shape (m x k times k x n)."""
    a = torch.randn(m, k, dtype=BF16, device="cuda")
    b_t = torch.randn(n, k, dtype=BF16, device="cuda")  # row-major (n, k): b = b_t.t() is column-major
    c = torch.empty(m, n, dtype=BF16, device="cuda")
    flops = 2.0 * m * n * k
    reps = REPS if flops > 1e11 else 30
    t_bf16 = timed(lambda: torch.matmul(a, b_t.t(), out=c), reps=reps)
    a8, b8 = a.to(FP8), b_t.to(FP8)
    one = torch.ones((), dtype=torch.float32, device="cuda")
    t_fp8 = timed(lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one, out_dtype=BF16), reps=reps)
    del a, b_t, c, a8, b8
    return t_bf16, t_fp8


def cast_rows():
    rows = []
    flush = make_flush()
    for (m, n) in ((2048, 12288), (8192, 12288), (2048, 49152)):
        x = torch.randn(m, n, dtype=BF16, device="cuda")
        t = timed(lambda: x.to(FP8), flush=flush)
        moved = x.numel() * 3  # read 2 bytes, write 1 byte per element
        rows.append({"op": "cast_bf16_to_fp8", "m": m, "n": n, "bytes_moved": moved, "time_s": t,
                     "GBps": moved / t / 1e9})
        del x
    return rows


def main():
    out, t0 = start_measurement()
    res = {**device_info(), "dtype": "fp8 e4m3 (per-tensor scale, bf16 output) beside bf16",
           "method": "median of 12 timed samples after 3 warm-ups (30 for GEMMs under 0.1 TFLOP); each "
                     "sample = CUDA events around back-to-back launches (about 2 ms) divided by their "
                     "count; random normal inputs; the cast: a 512 MiB L2 flush before each call, its "
                     "own separately timed cost subtracted"}
    res["cast"] = cast_rows()
    res["gemm"] = []
    for (tag, m, n, k) in fp8_shapes():
        t_bf16, t_fp8 = gemm_pair(m, n, k)
        f = 2.0 * m * n * k
        res["gemm"].append({"set": tag, "m": m, "n": n, "k": k, "bf16_time_s": t_bf16, "fp8_time_s": t_fp8,
                            "bf16_tflops": f / t_bf16 / 1e12, "fp8_tflops": f / t_fp8 / 1e12})
    print("gemm done", time.time() - t0, flush=True)
    write_measurement(res, out, t0)
    print("wrote", out, res["elapsed_s"])


if __name__ == "__main__":
    main()
