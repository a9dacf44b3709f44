#!/usr/bin/env python3
"""Measure Transformer Engine's parallel cross-entropy, forward and backward (issue 26: every
Megatron-Bridge performance recipe sets `cross_entropy_fusion_impl = "te"`, v0.2.0
scripts/performance/utils/helpers.py set_common_perf_overrides and the 25.09 yamls, so the
loss of the published Megatron-Bridge rows is TE's, not Megatron-Core's native fused one that
tools/measure/mcore_cross_entropy.py measured).

TE's loss (transformer_engine/pytorch/cross_entropy.py, TE v2.9 as in the 25.11 container) is
three Triton kernels in transformer_engine/pytorch/triton/cross_entropy.py: an online softmax
over each row (reads the logits), the loss kernel (reads them again and writes the gradient in
place), and in the backward an element-wise scale of that stored gradient by the loss's
gradient (Megatron multiplies the per-token losses by the loss mask, so the gradient is never
the scalar 1.0 and the scale always runs). Those are pure Triton + PyTorch: this script loads
that one file from a TE source tree (`git archive v2.9 transformer_engine/pytorch/triton` into
build-te/, git-ignored, carried to the device), so it needs no TE build, and calls it the way
Megatron-Core does at TP 1 (a [seq, 1, vocab] BF16 logits tensor, no process group: with one
TP rank the all-gather of the per-row statistics is skipped either way).

Beside it, on the same GPU and host, Megatron-Core's native fused loss (build-mcore/, as in
mcore_cross_entropy.py) for a same-machine ratio. Shapes, timing and units as there: vocab
201,088 / 128,256 / 50,304 at 4,096 and 8,192 tokens, median of REPS after WARM, CUDA events,
backward = (forward + backward) - forward, kernels counted with torch.profiler, bytes per logit
at the copy rate of a same-size FP32 clone (read 4 + write 4 bytes).
    mkdir -p build-te && git --git-dir=<TransformerEngine mirror> archive v2.9 \
        transformer_engine/pytorch/triton/cross_entropy.py | tar -x -C build-te
    python3 tools/measure/te_cross_entropy.py --te build-te --mcore build-mcore --out bench/data/h100-te-cross-entropy.json

STATUS: run on a lent H100 80GB HBM3 host (torch 2.11 / CUDA 13, Triton 3.6), 2026-12-07:
bench/data/h100-te-cross-entropy.json. TE 6.7 / 5.0 B a logit (median; 5.9-7.3 / 3.9-5.7), the
native fused path 31.8 / 18.4 in the same run; both give the same loss.
"""
import argparse
import importlib.util
import json
import os
import time

import torch

from gemm_attention_h200 import count_cuda_kernels, device_info, write_measurement
from mcore_cross_entropy import (REPS, SHAPES, WARM, cuda_time, init_mcore_tp1,  # the fused-loss
                                 loss_inputs)  # measurement's shapes, timing and unit


def load_te_triton_cross_entropy(te_root):
    path = os.path.join(te_root, "transformer_engine", "pytorch", "triton", "cross_entropy.py")
    spec = importlib.util.spec_from_file_location("te_triton_cross_entropy", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def te_loss_function(tce):
    """TE's CrossEntropyFunction (transformer_engine/pytorch/cross_entropy.py v2.9), verbatim in
    what it calls: forward -> cross_entropy_forward, saves the in-place gradient; backward ->
    cross_entropy_backward."""

    class CrossEntropyFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, target):
            loss, x = tce.cross_entropy_forward(x, target, 0.0, False, None, -100)
            ctx.save_for_backward(x.detach())
            return loss

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return tce.cross_entropy_backward(x, grad_output, False), None

    return CrossEntropyFunction.apply


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--te", required=True, help="folder holding transformer_engine/pytorch/triton")
    ap.add_argument("--mcore", help="folder holding megatron/core (adds the native fused loss)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    t0 = time.time()
    te_loss = te_loss_function(load_te_triton_cross_entropy(args.te))
    paths = [("te", te_loss)]
    if args.mcore:
        tp_group = init_mcore_tp1(args.mcore)
        from megatron.core.fusions.fused_cross_entropy import fused_vocab_parallel_cross_entropy
        paths.append(("mcore_fused", lambda x, t: fused_vocab_parallel_cross_entropy(x, t, tp_group)))
    res = device_info()
    res.update({"transformer_engine": "NVIDIA/TransformerEngine v2.9 transformer_engine/pytorch/triton/cross_entropy.py",
                "megatron_core": "NVIDIA/Megatron-LM 0d8e0714cd29 (Megatron-Bridge v0.2.0's pin)" if args.mcore else None,
                "triton": __import__("triton").__version__, "warm": WARM, "reps": REPS, "method": __doc__, "rows": []})
    for vocab, seq in SHAPES:
        logits_bf16, target, row = loss_inputs(vocab, seq)
        n, copy_Bps = row["logits"], row["copy_rate_Bps"]
        for name, fn in paths:
            # TE writes the gradient into its input: give every call a fresh copy, outside the
            # timed region's bytes (the clone is timed separately and subtracted).
            src = logits_bf16.clone()
            clone_s = cuda_time(lambda: src.clone())

            def fwd():
                x = src.clone().requires_grad_(True)
                return fn(x, target)

            def fwd_bwd():
                x = src.clone().requires_grad_(True)
                fn(x, target).sum().backward()

            f = cuda_time(fwd) - clone_s
            fb = cuda_time(fwd_bwd) - clone_s
            kf, kfb = count_cuda_kernels(fwd) - 1, count_cuda_kernels(fwd_bwd) - 1
            row[name] = {"forward_s": f, "backward_s": fb - f,
                         "kernels_forward": kf, "kernels_backward": kfb - kf,
                         "forward_bytes_per_logit": f * copy_Bps / n,
                         "backward_bytes_per_logit": (fb - f) * copy_Bps / n}
            # Same loss from both paths (a check that TE's kernels ran on these logits).
            with torch.no_grad():
                row[name]["loss_sum"] = float(fn(src.clone(), target).float().sum())
        row["bf16_clone_s"] = clone_s
        res["rows"].append(row)
        print(json.dumps(row), flush=True)
        del logits_bf16, src
        torch.cuda.empty_cache()
    write_measurement(res, args.out, t0)


if __name__ == "__main__":
    main()
