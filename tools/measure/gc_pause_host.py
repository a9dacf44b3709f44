"""Measure how long a full (generation-2) CPython garbage collection stops a training process.

MegaScale (NSDI'24) section 6.3 traces late launches of the last data-parallel reduce-scatter
to Python GC pauses that hit ranks at different times; megasim charges one such pause per step
while `gc_stragglers_fixed` is off (configs/hw/host.json `gc_pause_s`). This script builds a
process shaped like one Megatron-LM pipeline stage and times gc.collect():

  * torch, torch.distributed, numpy imported (their modules, classes and functions are most of
    the tracked objects of any PyTorch process);
  * one pipeline stage of the 175B model, TP 8: 12 layers of the tensor-parallel shard
    (hidden 12288, 16 local heads of 96, FFN 6144 local), bf16 on the GPU, with Adam state,
    after a few forward/backward/optimizer steps;
  * a GPT-2-style BPE tokenizer of the size Megatron-LM loads (encoder and decoder dicts of
    64,000 tokens, 64,000 merge ranks keyed by string pairs, a byte map and a word cache);
  * an argparse namespace of 500 options.

A real Megatron process holds more (dataset index objects, logging, hooks), so the figure is
a lower bound for it. Reports the median of 20 full collections (gen 2) and of 20 gen-1
collections, and the number of tracked objects. Writes JSON to $OUT (or stdout).
"""
import argparse
import gc
import platform
import statistics
import time

import numpy  # noqa: F401  (imported by every Megatron process; its objects count)
import torch
import torch.distributed  # noqa: F401

from gemm_attention_h200 import device_info, emit_to_out
from tp8_shard_layer import DEV, DT, H, S, ShardLayer

torch.manual_seed(0)
LAYERS = 12
VOCAB = 64000


def build_tokenizer():
    """Dicts of the shape GPT2BPETokenizer keeps: encoder, decoder, bpe_ranks, byte map, cache."""
    words = [f"\u0120tok{i:05d}" if i % 2 else f"tok{i:05d}" for i in range(VOCAB)]
    encoder = {w: i for i, w in enumerate(words)}
    decoder = {i: w for w, i in encoder.items()}
    bpe_ranks = {(w[: len(w) // 2], w[len(w) // 2:]): i for i, w in enumerate(words)}
    byte_encoder = {b: chr(256 + b) for b in range(256)}
    cache = {w: " ".join(w) for w in words[:20000]}
    return encoder, decoder, bpe_ranks, byte_encoder, cache


def timed(fn, n=20):
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(out), min(out), max(out)


def main():
    gc.collect()
    imports_only = (len(gc.get_objects()), timed(lambda: gc.collect(2))[0])
    stage = torch.nn.Sequential(*[ShardLayer() for _ in range(LAYERS)])
    opt = torch.optim.Adam(stage.parameters(), lr=1e-4, fused=True)
    x = torch.randn(S, H, device=DEV, dtype=DT)
    for _ in range(3):
        stage(x).float().pow(2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=False)
    torch.cuda.synchronize()

    gc.collect()
    with_model = (len(gc.get_objects()), timed(lambda: gc.collect(2))[0])
    tokenizer = build_tokenizer()
    parser = argparse.ArgumentParser()
    for i in range(500):
        parser.add_argument(f"--option-{i}", type=int, default=i)
    args = parser.parse_args([])

    gc.collect()
    tracked = len(gc.get_objects())
    full = timed(lambda: gc.collect(2))
    young = timed(lambda: gc.collect(1))
    result = {
        **device_info(),
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
        "setup": f"torch+numpy imported; {LAYERS}-layer 175B TP-8 stage shard with fused Adam after 3 steps; "
                 f"BPE tokenizer dicts of {VOCAB} tokens; argparse namespace of 500 options",
        "tracked_objects": tracked,
        "gen2_collect_ms": {"median": full[0], "min": full[1], "max": full[2]},
        "gen1_collect_ms": {"median": young[0], "min": young[1], "max": young[2]},
        "gen2_median_ms_by_stage": {
            "imports only": {"tracked_objects": imports_only[0], "ms": imports_only[1]},
            "+ model, optimizer, 3 steps": {"tracked_objects": with_model[0], "ms": with_model[1]},
            "+ tokenizer, argparse (the full process above)": {"tracked_objects": tracked, "ms": full[0]},
        },
    }
    del tokenizer, args
    emit_to_out(result, "h200-host-gc-pause.json")


if __name__ == "__main__":
    main()
