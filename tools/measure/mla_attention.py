#!/usr/bin/env python3
"""Measure cuDNN fused attention with multi-head latent attention's head shapes on one Hopper GPU.

Why: DeepSeek-V3's attention core (MLA, as Megatron-Core runs it after the up-projections) has
query/key heads of 192 (128 no-position + 64 RoPE) and value heads of 128. megasim prices it with
the cuDNN fused-attention fit of configs/hw/hopper.json, measured with equal head sizes of 96 and
128 only (tools/measure/cudnn_attention_h200.py), FLOPs counted as 2 * pairs * heads * (d_qk +
d_v) forward and 2.5x that backward. Whether cuDNN runs the asymmetric 192/128 shape at the same
rate as 128/128 was not measured; this script measures both in one run.

Shapes: causal, BF16, batch 1, sequence 4096 and 8192, 64 heads (DeepSeek-V3's 128 at TP 2) and
16, (d_qk, d_v) in (128, 128), (192, 128), (192, 192). torch SDPA with SDPBackend.CUDNN_ATTENTION
(the cuDNN frontend SDPA graph Transformer Engine's fused attention calls); a shape the backend
refuses is recorded with its error. Method as gemm_attention_h200.py: median of 12 samples of
back-to-back launches after warm-up, a 512 MiB L2 flush before each call with its time
subtracted; backward = forward+backward minus forward.
    python3 tools/measure/mla_attention.py --out bench/data/h100-mla-attention.json

STATUS: run on a lent H100 80GB HBM3 (torch 2.11, cuDNN 9.x), 2026-12-07:
bench/data/h100-mla-attention.json. Forward: 192/128 at 0.98-0.99 of 128/128's rate (574 vs 582
TFLOP/s at 4,096 tokens and 64 heads, 619 vs 627 at 8,192). Backward: 0.89-0.90 (414 vs 464, 430
vs 476); 192/192 much slower backward (0.68). configs/hw/hopper.json's cuDNN blocks carry
the means as head_dim_above_128 points.
"""
import os
import sys

import torch
import torch.nn.attention

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm_attention_h200 import (DT, device_info, make_flush, start_measurement,  # noqa: E402
                                 time_causal_sdpa, write_measurement)

PEAK_BF16 = 989.4e12  # H100/H200 SXM dense BF16, as fit_gemm_profile.py


def rows():
    out = []
    flush = make_flush()
    for s in (4096, 8192):
        for h in (64, 16):
            for dqk, dv in ((128, 128), (192, 128), (192, 192)):
                q = torch.randn(1, h, s, dqk, dtype=DT, device="cuda", requires_grad=True)
                k = torch.randn(1, h, s, dqk, dtype=DT, device="cuda", requires_grad=True)
                v = torch.randn(1, h, s, dv, dtype=DT, device="cuda", requires_grad=True)
                go = torch.randn(1, h, s, dv, dtype=DT, device="cuda")
                row = {"seq": s, "heads": h, "d_qk": dqk, "d_v": dv}
                try:
                    t_f, t_fb = time_causal_sdpa(q, k, v, go, torch.nn.attention.SDPBackend.CUDNN_ATTENTION, flush)
                except RuntimeError as e:
                    row["error"] = str(e)[:300]
                    out.append(row)
                    print(row, flush=True)
                    continue
                pairs = s * (s + 1) / 2
                f_fwd = 2.0 * pairs * h * (dqk + dv)
                row.update({"fwd_time_s": t_f, "fwd_bwd_time_s": t_fb,
                            "fwd_tflops": f_fwd / t_f / 1e12, "bwd_tflops": 2.5 * f_fwd / (t_fb - t_f) / 1e12,
                            "fwd_efficiency": f_fwd / t_f / PEAK_BF16,
                            "bwd_efficiency": 2.5 * f_fwd / (t_fb - t_f) / PEAK_BF16})
                out.append(row)
                print(row, flush=True)
                del q, k, v, go
    return out


def main():
    out, t0 = start_measurement()
    res = {**device_info(), "cudnn_version": torch.backends.cudnn.version(),
           "method": __doc__.split("Shapes:", 1)[1].split("    python3", 1)[0].strip(), "rows": rows()}
    write_measurement(res, out, t0)
    print("wrote", out, res["elapsed_s"])


if __name__ == "__main__":
    main()
