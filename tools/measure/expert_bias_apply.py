#!/usr/bin/env python3
"""Measure Megatron-Core's per-expert FC2 bias (issue 26, GPT-OSS): TEGroupedMLP builds its FC2
with skip_bias_add and adds the bias outside the grouped GEMM, scaled by each copy's routing
probability, one local expert at a time (megatron/core/transformer/moe/experts.py at the
commit Megatron-Bridge v0.2.0 pins, 0d8e0714cd29, `_apply_bias`):

    torch.cat([t + b * p for t, b, p in zip(torch.split(out, tokens_per_expert), biases,
                                           torch.split(probs, tokens_per_expert))]).to(out.dtype)

The function below is those lines. Shapes: one EP rank of GPT-OSS 120B at EP 8 (16 local
experts, hidden 2880), 4,096 tokens x top-4 = 16,384 routed rows spread evenly, BF16 output;
the probabilities in BF16 (Megatron's router returns them in the logits' dtype unless
moe_router_dtype is set) and in FP32. Also 16 rows per expert, where the GPU work is tiny: the
host's time per call.

Reported per call, median of REPS after WARM warm-ups: forward alone, forward + backward
(autograd through the bias and the probabilities, the output's gradient all ones), wall-clock
with torch.cuda.synchronize() around the call; the kernels each launches (torch.profiler); and
the bytes megasim charges (src/model/moe_ops.cpp, 6 passes over rows x hidden x 2 B each way)
for comparison.
    python3 tools/measure/expert_bias_apply.py --out bench/data/h100-expert-bias-apply.json
"""
import statistics
import time

import torch

from gemm_attention_h200 import count_cuda_kernels, device_info, start_measurement, write_measurement

DEV = "cuda"
H, LOCAL = 2880, 16
WARM, REPS = 5, 25


def apply_bias(out, biases, tokens_per_expert, probs):
    shape = out.shape
    return (
        torch.cat(
            [t + b * p for t, b, p in zip(torch.split(out.view(-1, shape[-1]), tokens_per_expert), biases,
                                          torch.split(probs, tokens_per_expert))]
        )
        .view(shape)
        .to(out.dtype)
    )


def case(rows_per_expert, probs_dtype):
    tokens = [rows_per_expert] * LOCAL
    rows = sum(tokens)
    out = torch.randn(rows, H, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    biases = [torch.randn(H, device=DEV, dtype=torch.bfloat16, requires_grad=True) for _ in range(LOCAL)]
    probs = torch.rand(rows, 1, device=DEV, dtype=probs_dtype, requires_grad=True)
    grad = torch.ones(rows, H, device=DEV, dtype=torch.bfloat16)

    def fwd():
        return apply_bias(out, biases, tokens, probs)

    def fwd_bwd():
        y = apply_bias(out, biases, tokens, probs)
        y.backward(grad)

    def timed(fn):
        for _ in range(WARM):
            fn()
        torch.cuda.synchronize()
        samples = []
        for _ in range(REPS):
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            samples.append(time.perf_counter() - t0)
        return statistics.median(samples)

    f = timed(fwd)
    fb = timed(fwd_bwd)
    return {"rows_per_expert": rows_per_expert, "local_experts": LOCAL, "hidden": H,
            "probs_dtype": str(probs_dtype).replace("torch.", ""),
            "forward_s": f, "forward_backward_s": fb, "backward_s": fb - f,
            "kernels_forward": count_cuda_kernels(fwd), "kernels_forward_backward": count_cuda_kernels(fwd_bwd),
            "megasim_bytes_each_way": 6.0 * rows * H * 2}


def main():
    out, t0 = start_measurement()
    res = {**device_info(),
           "what": "Megatron-Core TEGroupedMLP._apply_bias (experts.py @0d8e0714cd29), GPT-OSS 120B EP8 shapes",
           "method": f"wall-clock per call with torch.cuda.synchronize() around it, median of {REPS} after {WARM} "
                     "warm-ups; backward = forward+backward - forward; kernels counted with torch.profiler",
           "cases": []}
    for rows in (1024, 16):
        for dt in (torch.bfloat16, torch.float32):
            res["cases"].append(case(rows, dt))
            print(res["cases"][-1], flush=True)
    write_measurement(res, out, t0)


if __name__ == "__main__":
    main()
