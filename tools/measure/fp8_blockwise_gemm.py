#!/usr/bin/env python3
"""Measure, on one Hopper GPU, what two MoE-layer mechanisms cost that megasim's catalogs did not
yet hold:

1. FP8 GEMMs with Transformer Engine's blockwise (DeepSeek-style) scaling beside per-tensor FP8
   and BF16. TE's Float8BlockScaling recipe on Hopper runs cuBLASLt's block-scaled FP8 GEMMs
   (CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F / BLK128x128_32F): the forward and dgrad take 1x128
   activation scales against 128x128 weight scales, the wgrad 1x128 scales on both operands. The
   scales enter the main loop (not the epilogue, as a per-tensor scale does), so the kernels run
   slower. torch._scaled_mm / F.scaled_mm call the same cuBLASLt kernels with the same scale
   modes. Each shape is timed in BF16, per-tensor FP8 and blockwise FP8 in the same run, so the
   ratios are free of clock and driver differences.

2. Megatron-Core's unfused expert activation (TEGroupedMLP.forward's bias_act_func when
   bias_activation_fusion is off, experts.py): the activation, the product with the permuted
   routing probabilities (FP32 when moe_router_dtype is fp32, so the product is FP32) and the cast
   back to BF16; backward, autograd's mirror. Timed against the one fused-like GeLU pass, as
   bytes at the measured copy rate.

    python3 tools/measure/fp8_blockwise_gemm.py --out bench/data/h100-fp8-blockwise-gemm.json
"""
import time

import torch
import torch.nn.functional as F

from gemm_attention_h200 import device_info, make_flush, start_measurement, timed, write_measurement

BF16 = torch.bfloat16
FP8 = torch.float8_e4m3fn


def shapes():
    """(set, m, n, k): the moe_perf proxies' expert GEMMs (Mixtral proxy: 8,192 rows on one
    expert, h 4096, ffn 14336; DeepSeek proxy: 8,192 rows an expert, h 7168, ffn 2048), the
    transposed wgrad shapes, and a grid of transformer-like shapes. Every dimension a multiple
    of 512, so the 128-blocks' scale counts stay aligned."""
    out = []
    for (n, k) in ((14336, 4096), (4096, 14336), (2048, 7168), (7168, 2048)):
        out.append(("moe_perf_fprop_dgrad", 8192, n, k))
        out.append(("moe_perf_wgrad", k, n, 8192))
    for m in (2048, 4096, 8192, 16384):
        for n in (2048, 4096, 7168, 14336):
            for k in (2048, 4096, 7168, 14336):
                out.append(("grid", m, n, k))
    return out


def block_scales_1x128(rows, k):
    """Scales of a (rows, k) operand in 1x128 blocks along k, outer-dim-major as cuBLASLt wants."""
    return torch.rand(rows, k // 128, device="cuda", dtype=torch.float32).add_(0.5).t().contiguous().t()


def blockwise_call(a8, w8, wgrad):
    """A callable running a8 (m, k) x w8 (n, k)^T with block scales, or raise. Forward/dgrad
    style: 1x128 x 128x128; wgrad style: 1x128 x 1x128."""
    m, k = a8.shape
    n = w8.shape[0]
    sa = block_scales_1x128(m, k)
    if wgrad:
        sb = block_scales_1x128(n, k)  # (n, k/128), as cuBLASLt's VEC128 mode on B wants it
        kinds = ("BlockWise1x128", "BlockWise1x128")
    else:
        sb = torch.rand(n // 128, k // 128, device="cuda", dtype=torch.float32).add_(0.5).t()  # (k/128, n/128)
        kinds = ("BlockWise1x128", "BlockWise128x128")
    if hasattr(F, "scaled_mm") and hasattr(F, "ScalingType"):
        ra, rb = getattr(F.ScalingType, kinds[0]), getattr(F.ScalingType, kinds[1])
        fn = lambda: F.scaled_mm(a8, w8.t(), sa, ra, sb, rb, output_dtype=BF16)  # noqa: E731
    else:
        fn = lambda: torch._scaled_mm(a8, w8.t(), scale_a=sa, scale_b=sb, out_dtype=BF16)  # noqa: E731
    fn()
    torch.cuda.synchronize()
    return fn


def gemm_rows(errors):
    rows = []
    for (tag, m, n, k) in shapes():
        a = torch.randn(m, k, dtype=BF16, device="cuda")
        w = torch.randn(n, k, dtype=BF16, device="cuda")
        flops = 2.0 * m * n * k
        row = {"set": tag, "m": m, "n": n, "k": k}
        row["bf16_time_s"] = timed(lambda: torch.matmul(a, w.t()))
        a8, w8 = a.to(FP8), w.to(FP8)
        one = torch.ones((), dtype=torch.float32, device="cuda")
        row["fp8_tensorwise_time_s"] = timed(
            lambda: torch._scaled_mm(a8, w8.t(), scale_a=one, scale_b=one, out_dtype=BF16))
        for style in ("fprop", "wgrad"):
            try:
                fn = blockwise_call(a8, w8, style == "wgrad")
                row[f"fp8_blockwise_{style}_time_s"] = timed(fn)
            except Exception as e:  # noqa: BLE001 - the error is the result
                errors.setdefault(style, f"{type(e).__name__}: {e}"[:400])
        for key in [k2 for k2 in row if k2.endswith("_time_s")]:
            row[key.replace("_time_s", "_tflops")] = flops / row[key] / 1e12
        rows.append(row)
        del a, w, a8, w8
    return rows


def activation_rows():
    """Unfused expert activation times the probabilities and the cast (experts.py bias_act_func
    without bias_activation_fusion), forward and forward + backward, beside one GeLU pass and a
    copy: GeLU on the FC1 output (the moe_perf proxies, gated_linear_unit off) and the gated glu()
    chain (chunk, SiLU of one half, `x_linear + glu_linear_offset`, the product), with FP32
    probabilities (moe_router_dtype fp32: the product is FP32, then cast) and BF16 ones."""
    rows = []
    flush = make_flush()
    for gated in (False, True):
        for probs_dtype in (torch.float32, BF16):
            for (r, w) in ((8192, 14336), (32768, 2048), (16384, 2880)):
                fc1_w = 2 * w if gated else w
                x = torch.randn(r, fc1_w, dtype=BF16, device="cuda", requires_grad=True)
                p = torch.rand(r, 1, dtype=probs_dtype, device="cuda", requires_grad=True)
                g = torch.randn(r, w, dtype=BF16, device="cuda")

                def act():
                    if gated:
                        x_glu, x_linear = torch.chunk(x, 2, dim=-1)
                        return F.silu(x_glu) * (x_linear + 0.0)
                    return F.gelu(x)

                def unfused():
                    return (act() * p).to(BF16)

                def unfused_bwd():
                    x.grad = None
                    p.grad = None
                    unfused().backward(g)

                def copy():
                    return x.detach().clone()

                n = r * w  # elements of the activation's output
                row = {"gated": gated, "probs_dtype": str(probs_dtype), "rows": r, "width": w,
                       "fc1_output_elements": r * fc1_w, "output_elements": n,
                       "copy_time_s": timed(copy, flush=flush),
                       "unfused_forward_time_s": timed(unfused, flush=flush),
                       "unfused_forward_backward_time_s": timed(unfused_bwd, flush=flush)}
                if not gated:
                    row["gelu_time_s"] = timed(lambda: F.gelu(x), flush=flush)
                row["copy_GBps"] = 4.0 * r * fc1_w / row["copy_time_s"] / 1e9
                for key in ("gelu", "unfused_forward", "unfused_forward_backward"):
                    if f"{key}_time_s" in row:
                        row[f"{key}_bytes_per_output_element_at_copy_rate"] = (
                            row[f"{key}_time_s"] * row["copy_GBps"] * 1e9 / n)
                rows.append(row)
                del x, p, g
    return rows


def main():
    out, t0 = start_measurement()
    res = {**device_info(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "method": "median of 12 timed samples after 3 warm-ups; each sample = CUDA events around "
                     "back-to-back launches (about 2 ms) divided by their count; random inputs; the "
                     "activation rows flush a 512 MiB L2 buffer before each call and subtract it"}
    errors = {}
    res["gemm"] = gemm_rows(errors)
    res["blockwise_errors"] = errors
    print("gemm done", time.time() - t0, errors, flush=True)
    res["activation"] = activation_rows()
    write_measurement(res, out, t0)
    print("wrote", out, res["elapsed_s"])


if __name__ == "__main__":
    main()
