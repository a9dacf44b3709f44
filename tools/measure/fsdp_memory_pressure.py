#!/usr/bin/env python3
"""Does PyTorch's caching allocator slow an FSDP step near the memory limit? (issue 28: MPT-30B at
8,192 tokens on 8 H100s reads 22% fast; megasim puts that run at 73.7 of 79.6 GiB.)

One GPU replays one rank's memory pattern of an 8-rank FULL_SHARD step of MPT-30B (48 blocks,
hidden 7,168, 56 heads, vocabulary 50,368, tied embedding), as FSDP1 does it:
  - the sharded state lives for the whole run: FP32 parameter, FP32 gradient and Adam's two
    moments, 16 B per parameter / 8 ranks, as one ballast tensor (--ballast-gib; 0 = none);
  - each block's BF16 flat parameter (12 h^2 weights) is materialised before its forward and
    freed after it (storage resize_, as FSDP1's _alloc_storage / _free_storage), materialised
    again before its backward (a hook on the block's output gradient), and freed when its
    gradient is reduced;
  - the gradient: the BF16 unsharded gradient cast to FP32, pre-divided, its 1/8 shard kept
    (the reduce-scatter's output, added into the ballast's gradient shard), the rest freed;
  - full activation checkpointing of every block (torch.utils.checkpoint, non-reentrant);
  - the embedding's gathered weight, the logits in BF16 and the FP32 cross-entropy.
No collective runs (one GPU): what is timed is the compute plus the allocator. Per case: the
median step time of 2 steps of MICRO micro-batches after one warm-up step, the allocator's
num_alloc_retries and num_device_alloc / num_device_free over the timed steps, and the peak
allocated and reserved bytes.
    python3 tools/measure/fsdp_memory_pressure.py --out $OUT/h100-fsdp-memory-pressure.json
STATUS: run on the lent H100 80GB HBM3 with the default cases and with --cases
8192:60,8192:61.5,8192:62.5,4096:62.5; both runs' rows are in bench/data/h100-fsdp-memory-pressure.json.
No allocation retries and no slow-down anywhere up to 78.2 GiB reserved (8.21-8.22 s a step at
8,192 tokens whatever the ballast); one step further is an out-of-memory error, not a slope.
"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from gemm_attention_h200 import device_info, write_measurement

DEV, DT = "cuda", torch.bfloat16
H, HEADS, LAYERS, VOCAB, RANKS = 7168, 56, 48, 50368, 8
MICRO = 3


class Unit:
    """One FSDP unit's flat BF16 parameter: its storage comes and goes, as FSDP1 frees it."""

    def __init__(self, numel):
        self.numel = numel
        self.flat = torch.zeros(numel, device=DEV, dtype=DT, requires_grad=True)
        self.free()

    def gather(self):
        if self.flat.untyped_storage().size() == 0:
            self.flat.untyped_storage().resize_(self.numel * 2)
            # Stands in for the all-gather's writes; through .data, as NCCL's writes do not bump
            # the version counter that checkpointing checks.
            self.flat.data.fill_(0.001)

    def free(self):
        self.flat.untyped_storage().resize_(0)


def block_weights(flat):
    h = H
    sizes = [3 * h * h, h * h, 4 * h * h, 4 * h * h]
    qkv, proj, fc1, fc2 = torch.split(flat, sizes)
    return qkv.view(3 * h, h), proj.view(h, h), fc1.view(4 * h, h), fc2.view(h, 4 * h)


def block(x, flat):
    qkv_w, proj_w, fc1_w, fc2_w = block_weights(flat)
    b, s, h = x.shape
    q, k, v = F.linear(F.layer_norm(x, (h,)), qkv_w).view(b, s, 3, HEADS, h // HEADS).unbind(2)
    o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
    x = x + F.linear(o.transpose(1, 2).reshape(b, s, h), proj_w)
    return x + F.linear(F.gelu(F.linear(F.layer_norm(x, (h,)), fc1_w)), fc2_w)


def reduce_hook(unit, grad_shard):
    """FSDP1's post-backward: cast, pre-divide, keep this rank's shard, free the rest."""
    def hook(p):
        g = p.grad.to(torch.float32)
        g.div_(2.0)
        n = grad_shard.numel()
        grad_shard[:n].add_(g[:n])
        p.grad = None
        del g
        unit.free()
    return hook


def micro_batch(units, emb, grad_shard, seq):
    emb.gather()
    tokens = torch.randint(0, VOCAB, (1, seq), device=DEV)
    x = F.embedding(tokens, emb.flat.view(VOCAB, H))
    # Tied: the LM head uses the same weight; FSDP1 keeps the root unit gathered until backward.
    for u in units:
        u.gather()
        x = checkpoint(block, x, u.flat, use_reentrant=False)
        x.register_hook(lambda g, u=u: (u.gather(), g)[1])
        u.free()
    logits = F.linear(F.layer_norm(x, (H,)), emb.flat.view(VOCAB, H))
    loss = F.cross_entropy(logits.float().view(-1, VOCAB), tokens.view(-1))
    loss.backward()
    emb.free()


def run_case(seq, ballast_gib):
    torch.cuda.empty_cache()
    ballast = torch.empty(int(ballast_gib * 2**30), dtype=torch.uint8, device=DEV) if ballast_gib > 0 else None
    grad_shard = torch.zeros(12 * H * H // RANKS, device=DEV, dtype=torch.float32)
    units = [Unit(12 * H * H) for _ in range(LAYERS)]
    emb = Unit(VOCAB * H)
    for u in units:
        u.flat.register_post_accumulate_grad_hook(reduce_hook(u, grad_shard))
    emb.flat.register_post_accumulate_grad_hook(reduce_hook(emb, grad_shard))
    times, row = [], {"seq": seq, "ballast_gib": ballast_gib}
    try:
        for i in range(3):
            if i == 1:
                torch.cuda.reset_peak_memory_stats()
                base = torch.cuda.memory_stats()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(MICRO):
                micro_batch(units, emb, grad_shard, seq)
            torch.cuda.synchronize()
            if i >= 1:
                times.append(time.perf_counter() - t0)
        st = torch.cuda.memory_stats()
        row.update(step_s=statistics.median(times), steps_s=times,
                   num_alloc_retries=st["num_alloc_retries"] - base["num_alloc_retries"],
                   num_device_alloc=st.get("num_device_alloc", 0) - base.get("num_device_alloc", 0),
                   num_device_free=st.get("num_device_free", 0) - base.get("num_device_free", 0),
                   peak_allocated_gib=torch.cuda.max_memory_allocated() / 2**30,
                   peak_reserved_gib=torch.cuda.max_memory_reserved() / 2**30)
    except torch.OutOfMemoryError as e:
        row["error"] = "OOM: " + str(e)[:300]
    del ballast, units, emb, grad_shard
    torch.cuda.empty_cache()
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--cases", default="8192:0,8192:55.9,8192:57.5,4096:55.9,4096:57.5",
                    help="seq:ballast_gib pairs; 55.9 GiB = 30B params x 16 B / 8 ranks, 57.5 with the\n"
                         "1.36 GiB of NCCL and cuBLAS buffers megasim counts on each rank")
    args = ap.parse_args()
    t0 = time.time()
    torch.backends.cuda.matmul.allow_tf32 = False
    res = {**device_info(), "method": __doc__, "micro_batches_per_step": MICRO, "rows": []}
    for case in args.cases.split(","):
        seq, gib = case.split(":")
        row = run_case(int(seq), float(gib))
        res["rows"].append(row)
        print(row, flush=True)
    write_measurement(res, args.out, t0)


if __name__ == "__main__":
    main()
