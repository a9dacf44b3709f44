#!/usr/bin/env python3
"""Fit hw gemm.main_grad_exposed_fraction and gemm_fp8.main_grad_exposed_fraction from
fp8_main_grad_h200.py's files: per variant, the extra time of the FP32-accumulating GEMM over the
16-bit-output one, summed over shapes, divided by the time its 6 extra bytes per output element
(read 4 + write 4 instead of write 2) take at full HBM bandwidth, summed over the same shapes.
Shapes whose 16-bit GEMM takes under 40 us are left out (as fit_gemm_profile.py does).
    python3 tools/measure/fit_main_grad.py bench/data/h200-fp8-main-grad.json bench/data/h200-fp8-main-grad-run1.json
"""
import json
import sys

HBM_BPS = 4.8e12  # H200
VARIANTS = {"bf16 TN": ("bf16_fp32_accumulate_time_s", "bf16_out_time_s"),
            "bf16 NT (TE's BF16 wgrad layout)": ("bf16_nt_fp32_accumulate_time_s", "bf16_nt_out_time_s"),
            "fp8 TN (TE's FP8 wgrad)": ("fp8_fp32_accumulate_time_s", "fp8_bf16_out_time_s"),
            "torch.addmm out-of-place vs bf16 TN": ("torch_addmm_fp32_time_s", "bf16_out_time_s")}

for path in sys.argv[1:]:
    rows = json.load(open(path))["rows"]
    for name, (acc, out) in VARIANTS.items():
        used = [r for r in rows if acc in r and out in r and r[out] >= 40e-6]
        if not used:
            continue
        extra = sum(r[acc] - r[out] for r in used)
        ideal = sum(6.0 * r["m"] * r["n"] / HBM_BPS for r in used)
        per_shape = sorted((r[acc] - r[out]) / (6.0 * r["m"] * r["n"] / HBM_BPS) for r in used)
        print(f"{path}: {name}: exposed fraction {extra / ideal:.3f} over {len(used)} shapes "
              f"(per shape {per_shape[0]:.2f} .. {per_shape[-1]:.2f})")
