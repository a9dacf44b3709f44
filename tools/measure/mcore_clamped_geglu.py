#!/usr/bin/env python3
"""Measure Megatron-Core's clamped expert activation, GPT-OSS's (issue 26: GPT-OSS clamps the
gated activation's inputs at swiglu_limit 7.0; Megatron-Bridge's GPTOSSProvider sets
activation_func quick_gelu, glu_linear_offset 1.0, activation_func_clamp_value 7.0,
bias_activation_fusion on).

Megatron-Core's TEGroupedMLP calls fusions/fused_bias_geglu.py weighted_bias_quick_geglu_impl,
whose fused part (torch.compile'd weighted quick-GeGLU, one kernel each way) runs after an eager
clamp of each half and a torch.cat when a clamp value is set: three more kernels forward and
their autograd backward. megasim prices them from that code (src/model/moe_ops.cpp
add_moe_activation): forward 3 launches and 8 B per element of the FC1 output, backward 7
launches and 15 B per element, at the elementwise rate. This script runs the function itself
(from a build-mcore/ tree as mcore_cross_entropy.py) with and without the clamp at GPT-OSS-120B's
expert shapes at EP 8 (16,589 rows of 2 x 2,880, BF16; FP32 routing weights) and reports, for
each, forward and forward+backward GPU time (CUDA events, median of REPS after WARM), the kernels
each launches (torch.profiler), and the clamp's extra time as bytes per element of the FC1 output
at the measured copy rate of a same-size tensor.
    python3 tools/measure/mcore_clamped_geglu.py --mcore build-mcore --out bench/data/h100-mcore-clamped-geglu.json

STATUS: run on a lent H100 80GB HBM3 (torch 2.11), 2026-12-07: bench/data/h100-mcore-clamped-geglu.json.
The clamp adds 3 kernels and 0.48 ms forward (13.7 B an FC1 element at the copy rate), 9 kernels
and 0.93 ms backward (26.5 B); derived from the code they were 3 / 8 B and 7 / 15 B. megasim now
prices the measured figures.
"""
import os
import sys

import torch

from gemm_attention_h200 import count_cuda_kernels, device_info, write_measurement
from mcore_cross_entropy import REPS, WARM, cuda_time, mcore_args

ROWS, WIDTH = 16589, 2880


def main():
    args, t0 = mcore_args()
    sys.path.insert(0, os.path.abspath(args.mcore))
    from megatron.core.fusions.fused_bias_geglu import weighted_bias_quick_geglu_impl
    x = torch.randn(ROWS, 2 * WIDTH, device="cuda", dtype=torch.bfloat16) * 4
    w = torch.rand(ROWS, 1, device="cuda", dtype=torch.float32)
    g = torch.randn(ROWS, WIDTH, device="cuda", dtype=torch.bfloat16)
    elems = x.numel()
    copy_s = cuda_time(lambda: x.clone())
    byte_s = copy_s / (4.0 * elems)  # a clone reads and writes 2 bytes an element
    res = device_info()
    res.update({"megatron_core": "NVIDIA/Megatron-LM 0d8e0714cd29 (Megatron-Bridge v0.2.0's pin)",
                "rows": ROWS, "fc1_width": 2 * WIDTH, "warm": WARM, "reps": REPS, "method": __doc__,
                "copy_s": copy_s, "cases": []})
    times = {}
    for clamp in (None, 7.0):
        xi = x.clone().requires_grad_(True)
        wi = w.clone().requires_grad_(True)

        def fwd():
            with torch.no_grad():
                return weighted_bias_quick_geglu_impl(x, None, w, False, 1.0, clamp)

        def fwd_bwd():
            out = weighted_bias_quick_geglu_impl(xi, None, wi, False, 1.0, clamp)
            torch.autograd.grad(out, (xi, wi), g)

        f, fb = cuda_time(fwd), cuda_time(fwd_bwd)
        kf, kfb = count_cuda_kernels(fwd), count_cuda_kernels(fwd_bwd)
        times[clamp] = (f, fb - f)
        res["cases"].append({"clamp": clamp, "fwd_s": f, "fwd_bwd_s": fb, "bwd_s": fb - f,
                             "kernels_fwd": kf, "kernels_fwd_bwd": kfb})
        print(res["cases"][-1], flush=True)
    extra_f = times[7.0][0] - times[None][0]
    extra_b = times[7.0][1] - times[None][1]
    res["clamp_extra"] = {"fwd_s": extra_f, "bwd_s": extra_b,
                          "fwd_bytes_per_fc1_element": extra_f / byte_s / elems,
                          "bwd_bytes_per_fc1_element": extra_b / byte_s / elems}
    print(res["clamp_extra"], flush=True)
    write_measurement(res, args.out, t0)


if __name__ == "__main__":
    main()
