#!/usr/bin/env python3
"""Measure Megatron-Core's vocab-parallel cross-entropy, forward and backward (issue 26: the
loss of a large-vocabulary model runs on the last pipeline stage every micro-batch; GPT-OSS's
201,088-token vocabulary at 4,096 tokens is 824 M logits).

megasim prices the loss as memory-bound passes over the logits (src/model/embedding_ops.cpp:
forward reads the 16-bit logits and makes 3 passes over 4-byte ones, backward writes 4 and
reads 2 bytes a logit). This script runs Megatron-Core's own code on one GPU (TP 1, world size
1) and times it, so the pass count is a measured figure:
  fused    megatron.core.fusions.fused_cross_entropy.fused_vocab_parallel_cross_entropy
           (cross_entropy_loss_fusion, Megatron-Bridge's default: jit-fused helpers)
  unfused  megatron.core.tensor_parallel.cross_entropy.vocab_parallel_cross_entropy
The Megatron-Core sources are those of the commit Megatron-Bridge v0.2.0 pins (NVIDIA/Megatron-LM
0d8e0714cd29, `git archive ... megatron/core` into build-mcore/, git-ignored, carried to the
device).

Shapes: [seq, batch=1, vocab] BF16 logits with random targets; vocab 201,088 (GPT-OSS),
128,256 (Llama 3) and 50,304 (GPT-3 padded); 4,096 and 8,192 tokens. Each time is the median of
REPS after WARM warm-ups, CUDA events around the call, forward alone and forward + backward
(backward = difference), and the kernels each launches (torch.profiler); reported as
bytes-equivalent passes at the measured copy rate of a
same-size 4-byte tensor (clone of an FP32 tensor of the logits' size: read 4 + write 4 bytes).
    python3 tools/measure/mcore_cross_entropy.py --mcore build-mcore --out bench/data/h100-mcore-cross-entropy.json

STATUS: run twice on lent H100 80GB HBM3 hosts (torch 2.11 / CUDA 13), 2026-12-06:
bench/data/h100-mcore-cross-entropy.json (before the kernel counts were added to the script) and
bench/data/h100-mcore-cross-entropy-run2.json (with them); the two agree within 1 B a logit.
Both runs' backward included the harness adding each gradient into x.grad (x was a leaf reused
across calls): about 5 B a logit and one kernel that Megatron never runs. The script now takes
the gradient without accumulating; te_cross_entropy.py's run (fresh logits per call) measured
the fused path's backward without it. Re-run on a lent H100 on 2026-12-07 without it:
bench/data/h100-mcore-cross-entropy-run3.json (unfused backward 12.4-15.5 B a logit, median 15.3,
where the first two runs read 19.3-19.8; 10-16 kernels).
"""
import argparse
import os
import statistics
import sys
import time

import torch

from gemm_attention_h200 import count_cuda_kernels

WARM, REPS = 3, 11


def cuda_time(fn):
    for _ in range(WARM):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(REPS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        samples.append(a.elapsed_time(b) * 1e-3)
    return statistics.median(samples)


SHAPES = [(vocab, seq) for vocab in (201088, 128256, 50304) for seq in (4096, 8192)]


def loss_inputs(vocab, seq):
    """[seq, 1, vocab] BF16 logits, random targets, and the row's copy rate: a same-size FP32
    clone (read 4 + write 4 bytes a logit), the unit the loss's time is expressed in."""
    logits_bf16 = torch.randn(seq, 1, vocab, device="cuda", dtype=torch.bfloat16)
    target = torch.randint(0, vocab, (seq, 1), device="cuda")
    fp32 = torch.empty(seq, 1, vocab, device="cuda", dtype=torch.float32)
    copy_s = cuda_time(lambda: fp32.clone())
    n = seq * vocab
    del fp32
    return logits_bf16, target, {"vocab": vocab, "tokens": seq, "logits": n, "fp32_clone_s": copy_s,
                                 "copy_rate_Bps": 8.0 * n / copy_s}


def init_mcore_tp1(mcore_root):
    """Megatron-Core from mcore_root on one GPU, TP 1 (a world of one): its TP process group."""
    sys.path.insert(0, os.path.abspath(mcore_root))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29519")
    torch.distributed.init_process_group("nccl", rank=0, world_size=1)
    torch.cuda.set_device(0)
    from megatron.core import parallel_state
    parallel_state.initialize_model_parallel(1, 1)
    return parallel_state.get_tensor_model_parallel_group()


def mcore_args():
    """--mcore (the folder holding megatron/core) and --out; with the start time."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--mcore", required=True, help="folder holding megatron/core")
    ap.add_argument("--out", required=True)
    return ap.parse_args(), time.time()


def main():
    args, t0 = mcore_args()
    tp_group = init_mcore_tp1(args.mcore)
    from megatron.core.fusions.fused_cross_entropy import fused_vocab_parallel_cross_entropy
    from megatron.core.tensor_parallel.cross_entropy import vocab_parallel_cross_entropy
    props = torch.cuda.get_device_properties(0)
    res = {"device": props.name, "torch": torch.__version__, "cuda": torch.version.cuda,
           "megatron_core": "NVIDIA/Megatron-LM 0d8e0714cd29 (Megatron-Bridge v0.2.0's pin)",
           "warm": WARM, "reps": REPS, "method": __doc__, "rows": []}
    for vocab, seq in SHAPES:
        logits_bf16, target, row = loss_inputs(vocab, seq)
        n, copy_Bps = row["logits"], row["copy_rate_Bps"]
        for name, fn in (("fused", lambda x: fused_vocab_parallel_cross_entropy(x, target, tp_group)),
                         ("unfused", lambda x: vocab_parallel_cross_entropy(x, target))):
            x = logits_bf16.clone().requires_grad_(True)

            def fwd():
                return fn(x)

            def fwd_bwd():  # the gradient as the output layer's backward takes it: no leaf .grad
                torch.autograd.grad(fn(x).sum(), x)  # (runs 1-2 accumulated into x.grad: +6 B)

            f = cuda_time(fwd)
            fb = cuda_time(fwd_bwd)
            kf, kfb = count_cuda_kernels(fwd), count_cuda_kernels(fwd_bwd)
            row[name] = {"forward_s": f, "backward_s": fb - f,
                         "kernels_forward": kf, "kernels_backward": kfb - kf,
                         "forward_bytes_per_logit": f * copy_Bps / n,
                         "backward_bytes_per_logit": (fb - f) * copy_Bps / n}
        res["rows"].append(row)
        print(row, flush=True)
        del logits_bf16
        torch.cuda.empty_cache()
    res["elapsed_s"] = time.time() - t0
    import json
    with open(args.out, "w") as fh:
        json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
