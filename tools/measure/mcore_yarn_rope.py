#!/usr/bin/env python3
"""Measure Megatron-Core's unfused rotary embedding, the path YaRN models take (issue 26:
GPT-OSS's position embedding is YaRN; Megatron-LM's arguments.py and Megatron-Bridge's
GPTModelProvider.provide() turn apply_rope_fusion off for any position_embedding_type but
"rope", and rope_utils.apply_rotary_pos_emb falls back to the unfused path whenever YaRN's
attention scale mscale is not 1).

megasim prices it (src/model/rope_ops.cpp add_rope) from the code at Megatron-Bridge v0.2.0's
pin: per tensor 12 launches and 12 passes of the tensor forward, 9 launches and 17 passes
backward, each launch at a plain PyTorch op's host time. This script runs that code
(megatron.core.models.common.embeddings.rope_utils._apply_rotary_pos_emb_bshd, from a
build-mcore/ tree as in mcore_cross_entropy.py) on GPT-OSS-120B's shapes at TP 1 (4,096 tokens,
64 query heads and 8 key heads of 64, mscale 0.1 ln 32 + 1) and reports per tensor:
  kernels        forward / backward launches (torch.profiler)
  passes         GPU time as passes of the tensor at the copy rate of a same-size clone
                 (read + write = 2 passes), CUDA events, median of REPS after WARM
  host_us        the host's time per launch: wall time of 200 back-to-back calls (forward, and
                 forward + backward) over their launches, with the GPU far ahead of nothing
                 (each call's kernels are short, so the host bounds the loop)
    python3 tools/measure/mcore_yarn_rope.py --mcore build-mcore --out bench/data/h100-mcore-yarn-rope.json

STATUS: run on a lent H100 80GB HBM3 host (torch 2.11 / CUDA 13), 2026-12-07:
bench/data/h100-mcore-yarn-rope.json. 12 / 7 kernels per tensor; the query tensor 20.3 / 21.5
passes. The host figures are bounded by the GPU here (the query's kernels are not short), so
they are not used: the host time per launch stays the plain PyTorch op's measured one.
"""
import json
import math
import os
import sys
import time

import torch

from gemm_attention_h200 import count_cuda_kernels, device_info, write_measurement
from mcore_cross_entropy import REPS, WARM, cuda_time, mcore_args

HOST_CALLS = 200


def host_s_per_call(fn):
    for _ in range(WARM):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(HOST_CALLS):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / HOST_CALLS


def main():
    args, t0 = mcore_args()
    sys.path.insert(0, os.path.abspath(args.mcore))
    from megatron.core.models.common.embeddings.rope_utils import _apply_rotary_pos_emb_bshd
    seq, head_dim = 4096, 64
    mscale = 0.1 * math.log(32.0) + 1.0
    freqs = torch.randn(seq, 1, 1, head_dim, device="cuda", dtype=torch.float32)
    res = device_info()
    res.update({"megatron_core": "NVIDIA/Megatron-LM 0d8e0714cd29 (Megatron-Bridge v0.2.0's pin)",
                "warm": WARM, "reps": REPS, "host_calls": HOST_CALLS, "mscale": mscale,
                "method": __doc__, "rows": []})
    for name, heads in (("query", 64), ("key", 8)):
        src = torch.randn(seq, 1, heads, head_dim, device="cuda", dtype=torch.bfloat16)
        elems = src.numel()
        copy_s = cuda_time(lambda: src.clone())
        pass_s = copy_s / 2.0  # one read or one write of the tensor

        def fwd():
            return _apply_rotary_pos_emb_bshd(src, freqs, mscale=mscale)

        x = src.clone().requires_grad_(True)
        grad = torch.randn_like(src)

        def fwd_bwd():  # the gradient as the attention's backward passes it on (no leaf .grad)
            torch.autograd.grad(_apply_rotary_pos_emb_bshd(x, freqs, mscale=mscale), x, grad)

        f, fb = cuda_time(fwd), cuda_time(fwd_bwd)
        kf, kfb = count_cuda_kernels(fwd), count_cuda_kernels(fwd_bwd)
        hf, hfb = host_s_per_call(fwd), host_s_per_call(fwd_bwd)
        row = {"tensor": name, "tokens": seq, "heads": heads, "head_dim": head_dim, "elements": elems,
               "clone_s": copy_s, "forward_s": f, "backward_s": fb - f,
               "kernels_forward": kf, "kernels_backward": kfb - kf,
               "passes_forward": f / pass_s, "passes_backward": (fb - f) / pass_s,
               "host_s_per_call_forward": hf, "host_s_per_call_forward_backward": hfb,
               "host_us_per_launch_forward": 1e6 * hf / kf,
               "host_us_per_launch_backward": 1e6 * (hfb - hf) / max(1, kfb - kf)}
        res["rows"].append(row)
        print(json.dumps(row), flush=True)
    write_measurement(res, args.out, t0)


if __name__ == "__main__":
    main()
