"""How much a GEMM slows while a communication-like kernel holds some SMs (single-GPU proxy for
NCCL running beside a GEMM; the model's hw overlap.nccl_channels assumes compute slows by
SMs / (SMs - channels)).

The proxy: a persistent Triton copy kernel with one program per 'channel' (512 threads each,
like an NCCL channel's thread block), streaming a 1 GiB buffer HBM -> HBM on a second stream and
launched first (Megatron relies on CUDA_DEVICE_MAX_CONNECTIONS=1 so the communication kernel
is scheduled before the GEMM). A loop of bf16 GEMMs of the 175B TP-8 FFN shape runs on the
default stream; its time with and without the copy running beside it gives the slow-down. It is
a proxy: NCCL's blocks also wait on NVLink flags and move data over NVLink, not HBM to HBM.
    python3 tools/measure/sm_sharing_h200.py --out bench/data/h200-sm-sharing.json
"""
import statistics

import torch
import triton
import triton.language as tl

from gemm_attention_h200 import device_info, start_measurement, write_measurement


@triton.jit
def persistent_copy(src, dst, n, rounds, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    step = tl.num_programs(0) * BLOCK
    for _ in range(rounds):
        for start in range(pid * BLOCK, n, step):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


GEMMS = [(2048, 6144, 12288), (2048, 12288, 6144), (8192, 3072, 6144)]  # m, n, k
CHANNELS = [0, 8, 16, 24, 32]
LOOP, REPS = 40, 7


def gemm_loop_s(a, b, c, side=None, channels=0):
    """Seconds per GEMM over LOOP back-to-back GEMMs, optionally with the copy beside them."""
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if channels:
        with torch.cuda.stream(side["stream"]):
            persistent_copy[(channels,)](side["src"], side["dst"], side["src"].numel(), side["rounds"],
                                         BLOCK=4096, num_warps=16)
    start.record()
    for _ in range(LOOP):
        torch.matmul(a, b, out=c)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / LOOP


def copy_rate_Bps(side, channels):
    """HBM bytes per second the copy moves alone (read + write)."""
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    persistent_copy[(channels,)](side["src"], side["dst"], side["src"].numel(), 1, BLOCK=4096, num_warps=16)
    end.record()
    torch.cuda.synchronize()
    return 2 * side["src"].numel() * side["src"].element_size() / (start.elapsed_time(end) / 1e3)


def main():
    out, t0 = start_measurement()
    res = {**device_info(), "method": __doc__.split("\n    python3")[0], "rows": []}
    n = 2**29  # 1 GiB of bf16
    side = {"stream": torch.cuda.Stream(), "src": torch.randn(n, device="cuda", dtype=torch.bfloat16),
            "dst": torch.empty(n, device="cuda", dtype=torch.bfloat16), "rounds": 0}
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    copy_rate_Bps(side, 8)  # compile the kernel outside the timed calls
    for m, nn, k in GEMMS:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, nn, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(m, nn, device="cuda", dtype=torch.bfloat16)
        for _ in range(3):
            gemm_loop_s(a, b, c)
        alone = statistics.median(gemm_loop_s(a, b, c) for _ in range(REPS))
        for ch in CHANNELS[1:]:
            rate = copy_rate_Bps(side, ch)
            # Enough copy rounds to outlast the GEMM loop (x3), so every GEMM runs beside it.
            side["rounds"] = max(1, int(3 * alone * LOOP * rate / (2 * n * 2)) + 1)
            beside = statistics.median(gemm_loop_s(a, b, c, side, ch) for _ in range(REPS))
            torch.cuda.synchronize()
            row = {"m": m, "n": nn, "k": k, "channels": ch, "gemm_alone_s": alone, "gemm_beside_copy_s": beside,
                   "slowdown": beside / alone, "model_slowdown": sms / (sms - ch),
                   "copy_alone_Bps": rate}
            res["rows"].append(row)
            print(row, flush=True)
    write_measurement(res, out, t0)


if __name__ == "__main__":
    main()
