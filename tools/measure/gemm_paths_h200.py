#!/usr/bin/env python3
"""The same GEMMs through two library paths in one run: PyTorch's (torch.mm for BF16,
torch._scaled_mm for FP8 E4M3 x E4M3, as gemm_attention_h200.py and fp8_gemm_h200.py time them
for the hw profile's fits) and cuBLASLt called directly with the first heuristic algorithm and a
32 MiB workspace, in the 'TN' layout, as Transformer Engine calls it (fp8_main_grad_h200.py's Lt).
BF16 output throughout.

Purpose: whether the GEMM rates fitted from PyTorch's path hold for Transformer Engine's. The
shapes are those of bench/data/h200-fp8-gemm.json (the suites' layers and a grid) whose PyTorch
time there is at least 40 us.

Timing: as gemm_attention_h200.py (CUDA events around back-to-back calls, median of 12 samples
after 3 warm-ups).
    python3 tools/measure/gemm_paths_h200.py --out bench/data/h200-gemm-paths.json
"""
import json
import os

import torch

from fp8_main_grad_h200 import Lt
from gemm_attention_h200 import device_info, start_measurement, timed, write_measurement

DEV = "cuda"
BF16 = torch.bfloat16


def shapes():
    here = os.path.dirname(os.path.abspath(__file__))
    rows = json.load(open(os.path.join(here, "..", "..", "bench", "data", "h200-fp8-gemm.json")))["gemm"]
    return sorted({(r["m"], r["n"], r["k"]) for r in rows if min(r["bf16_time_s"], r["fp8_time_s"]) >= 40e-6})


def main():
    out, t0 = start_measurement()
    lt = Lt()
    res = {**device_info(), "method": __doc__.split("Timing: ")[1].split("\n    python3")[0], "rows": []}
    one = torch.ones((), device=DEV)
    for m, n, k in shapes():
        row = {"m": m, "n": n, "k": k}
        a = torch.randn(m, k, device=DEV, dtype=BF16)
        b = torch.randn(k, n, device=DEV, dtype=BF16)
        row["torch_bf16_time_s"] = timed(lambda: torch.mm(a, b))
        a8 = a.to(torch.float8_e4m3fn)
        b8 = torch.randn(n, k, device=DEV).to(torch.float8_e4m3fn)
        row["torch_fp8_time_s"] = timed(lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one, out_dtype=BF16))
        del a, b, a8, b8
        row["cublaslt_bf16_time_s"] = timed(lt.gemm(m, n, k, False, False))
        row["cublaslt_fp8_time_s"] = timed(lt.gemm(m, n, k, True, False, b_e5m2=False))
        torch.cuda.empty_cache()
        print(row, flush=True)
        res["rows"].append(row)
    write_measurement(res, out, t0)


if __name__ == "__main__":
    main()
