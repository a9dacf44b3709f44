#!/usr/bin/env python3
"""Measure cuDNN fused attention against FlashAttention-2 on one Hopper GPU, side by side.

Why: Transformer Engine (what NeMo and Megatron-Core run) disables FlashAttention on sm90 "to give
FusedAttention preference on Hopper+ for performance reasons" whenever cuDNN's F16_arbitrary_seqlen
backend supports the call (NVIDIA/TransformerEngine transformer_engine/pytorch/attention.py,
get_attention_backend). That backend is cuDNN's flash-style fused SDPA graph; PyTorch's
SDPBackend.CUDNN_ATTENTION calls the same cuDNN frontend SDPA graphs, so it stands in for it here.
The FlashAttention-2 rows (SDPBackend.FLASH_ATTENTION) repeat gemm_attention_h200.py's attention
sweep in the same run, so the ratio between the two needs no cross-run assumption.

Method as in gemm_attention_h200.py: median of 12 samples of back-to-back launches after warm-up,
a 512 MiB L2 flush before each call with its own time subtracted. Causal FLOPs as the
FlashAttention-2 paper counts them: forward 4*b*h*s^2*d/2, backward 2.5x the forward. A second
sweep repeats head_dim 128 with attention dropout 0.1 (GPT-3-style configs keep it).

  python3 tools/measure/cudnn_attention_h200.py --out bench/data/h200-cudnn-attention.json
"""
import os
import sys

import torch
import torch.nn.attention
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm_attention_h200 import (DT, device_info, make_flush, start_measurement, timed,  # noqa: E402
                                 write_measurement)

BACKENDS = (("cudnn", torch.nn.attention.SDPBackend.CUDNN_ATTENTION),
            ("flash", torch.nn.attention.SDPBackend.FLASH_ATTENTION))


def attention_rows(dropout_p=0.0):
    rows = []
    flush = make_flush()
    shapes = ((512, 32), (1024, 16), (2048, 8), (4096, 4), (8192, 2), (16384, 1))
    for d in ((128, 96) if dropout_p == 0 else (128,)):
        for s, bsz in (shapes if dropout_p == 0 else shapes[1:5]):
            for backend_name, backend in BACKENDS:
                h = 16
                q = torch.randn(bsz, h, s, d, dtype=DT, device="cuda", requires_grad=True)
                k = torch.randn_like(q, requires_grad=True)
                v = torch.randn_like(q, requires_grad=True)
                go = torch.randn_like(q)
                try:
                    with torch.nn.attention.sdpa_kernel(backend):
                        fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                     dropout_p=dropout_p)
                        t_f = timed(fwd, flush=flush)

                        def fb():
                            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout_p)
                            torch.autograd.grad(o, (q, k, v), go)
                        t_fb = timed(fb, flush=flush)
                except RuntimeError as e:  # the backend refused the shape: record it, go on
                    rows.append({"backend": backend_name, "batch": bsz, "heads": h, "seq": s,
                                 "head_dim": d, "error": str(e)[:200]})
                    continue
                f_fwd = 4.0 * bsz * h * s * s * d / 2
                rows.append({"backend": backend_name, "batch": bsz, "heads": h, "seq": s, "head_dim": d,
                             "causal": True, "dropout_p": dropout_p, "fwd_time_s": t_f, "fwd_bwd_time_s": t_fb,
                             "fwd_tflops_causal": f_fwd / t_f / 1e12,
                             "bwd_tflops_causal": 2.5 * f_fwd / (t_fb - t_f) / 1e12})
                print(rows[-1], flush=True)
                del q, k, v, go
    return rows


def main():
    out, t0 = start_measurement()
    res = {**device_info(),
           "cudnn_version": torch.backends.cudnn.version(),
           "method": "median of 12 timed samples after 3 warm-ups; each sample = CUDA events around "
                     "back-to-back launches (about 2 ms) divided by their count; random normal inputs; "
                     "a 512 MiB L2 flush before each call, its own separately timed cost subtracted; "
                     "torch SDPA with one backend forced (cudnn = SDPBackend.CUDNN_ATTENTION, "
                     "flash = SDPBackend.FLASH_ATTENTION), causal; 'attention' without dropout, "
                     "'attention_dropout' with dropout_p 0.1"}
    res["attention"] = attention_rows()
    res["attention_dropout"] = attention_rows(dropout_p=0.1)
    write_measurement(res, out, t0)
    print("wrote", out, res["elapsed_s"])


if __name__ == "__main__":
    main()
