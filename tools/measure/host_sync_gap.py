"""Measure the GPU idle time a host-side torch.cuda.synchronize() exposes before the next
model chunk's forward (Megatron-LM 2023 calls it after every batched pipeline send/recv:
'To protect against race condition when using batch_isend_irecv()').

The chunk is two transformer layers of one tensor-parallel shard of the 175B model (TP 8:
hidden 12288, 16 local heads of 96, FFN 6144 local), eager PyTorch bf16 on one GPU, without
communication. Two timings:
  pipelined: 20 chunk forwards launched back to back (the host runs ahead), per chunk;
  synced:    torch.cuda.synchronize() before every chunk forward, wall time per chunk.
exposed gap = synced - pipelined: the GPU waits for the host to issue the chunk's first
kernels and for any host-bound stretch after a drain. Writes JSON to $OUT (or stdout).
"""
import statistics
import time

import torch

from gemm_attention_h200 import emit_to_out
from tp8_shard_layer import DEV, DT, H, S, ShardLayer

torch.manual_seed(0)


chunk = torch.nn.Sequential(ShardLayer(), ShardLayer())
x = torch.randn(S, H, device=DEV, dtype=DT)
results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}

with torch.no_grad():
    for _ in range(5):
        chunk(x)
    torch.cuda.synchronize()

    def pipelined(n=20):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(n):
            chunk(x)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / 1e3 / n

    def synced(n=20):
        times = []
        for _ in range(n):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            chunk(x)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    def host_issue(n=20):
        # Host time to issue one chunk's kernels (queue not drained in between).
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            chunk(x)
            times.append(time.perf_counter() - t0)
        torch.cuda.synchronize()
        return statistics.median(times)

    p = statistics.median(pipelined() for _ in range(7))
    s = statistics.median(synced() for _ in range(7))
    h = statistics.median(host_issue() for _ in range(3))
    # The bare cost of a synchronize on an idle queue, for reference.
    idle = []
    for _ in range(200):
        t0 = time.perf_counter()
        torch.cuda.synchronize()
        idle.append(time.perf_counter() - t0)

results.update({
    "chunk": "2 layers, TP-8 shard of 175B, seq 2048, eager bf16, forward only",
    "pipelined_chunk_s": p,
    "synced_chunk_s": s,
    "exposed_gap_per_sync_s": s - p,
    "host_issue_per_chunk_s": h,
    "idle_synchronize_s": statistics.median(idle),
    "method": "median of 7 x 20 chunk forwards; pipelined = CUDA events around 20 back-to-back forwards; synced = wall time of [synchronize; forward; synchronize]",
})
emit_to_out(results, "h200-host-sync-gap.json")
