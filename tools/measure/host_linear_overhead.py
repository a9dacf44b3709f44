#!/usr/bin/env python3
"""How fast this host issues a PyTorch op, against the published speed of a DGX H100's host.

megasim's hardware profiles carry host_dispatch_s, the host time per eager PyTorch launch,
measured on a lent machine (tools/measure/moe_host_sync_h200.py: 16.3 us and 28.8 us on two lent
H100 hosts). A prediction that is bound by the host scales with that figure, and the lent hosts
are not DGX H100s. The one published per-op host time on a DGX H100 host (Intel Xeon Platinum
8480C) is Transformer Engine issue #2053 (2025-08-11): torch.nn.Linear forward, BF16, hidden
2048, 8,192 tokens: "CPU runtime" 13.48 us per forward on the H100 DGX (37.08 on GB200, 33.17 on
GH200), GPU runtime 100.06 us.

This script times that same op on this host, so that the lent host's plain-layer rate can be
carried to a DGX H100 host by the ratio of the two Linear figures. Run it in the same device
session as moe_host_sync_h200.py (the plain-layer rate) so that both come from one host.

Method: a torch.nn.Linear(2048, 2048, bias=False) in BF16 on a (8192, 2048) input, autograd on
(a training forward) and under torch.no_grad(); after WARM calls and a synchronize, N calls are
issued back to back and the host's wall time over them (time.perf_counter, no synchronize
inside; N x the GPU time stays far below the launch queue's depth, so the host never blocks)
is divided by N; median of REPS such loops. The GPU time per call is timed with CUDA events over
the same loop. Also recorded: the CPU model and Python/torch versions (the issue ran a 2025
PyTorch; this host's is newer).
    python3 tools/measure/host_linear_overhead.py --out bench/data/h100-host-linear-overhead.json

STATUS: run six times on one lent H100 host (Intel Xeon, 16 cores; torch 2.11), 2026-12-07,
beside two runs of moe_host_sync_h200.py (bench/data/h100-moe-host-sync-host4.json, -run2):
bench/data/h100-host-linear-overhead.json and -run2..-run6, autograd host 32.1, 18.6, 28.6, 20.2,
18.1, 18.0 us a Linear forward (GPU 95-105 us, the issue's 100); the plain layer 26.7 and 18.5 us a
launch in its two runs. The host itself moves by 1.8x between processes, so the pair gives a DGX
H100 per-launch rate of 13.9-19.4 us (13.48 x layer / Linear); the profiles' 16.3 us lies inside.
"""
import platform
import statistics
import time

import torch

from gemm_attention_h200 import device_info, start_measurement, write_measurement

WARM, REPS, N = 20, 31, 64
TOKENS, HIDDEN = 8192, 2048


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError as e:
        return str(e)
    return platform.processor()


def host_and_gpu_us(fn):
    for _ in range(WARM):
        fn()
    torch.cuda.synchronize()
    host, gpu = [], []
    for _ in range(REPS):
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        t = time.perf_counter()
        for _ in range(N):
            fn()
        host.append((time.perf_counter() - t) / N * 1e6)
        b.record()
        torch.cuda.synchronize()
        gpu.append(a.elapsed_time(b) * 1e3 / N)
    return statistics.median(host), statistics.median(gpu), min(host), max(host)


def main():
    out, t0 = start_measurement()
    lin = torch.nn.Linear(HIDDEN, HIDDEN, bias=False, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(TOKENS, HIDDEN, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    rows = []
    for mode in ("autograd", "no_grad"):
        if mode == "autograd":
            fn = lambda: lin(x)
        else:
            def fn():
                with torch.no_grad():
                    return lin(x)
        h, g, lo, hi = host_and_gpu_us(fn)
        rows.append({"mode": mode, "host_us_per_call": h, "host_us_min": lo, "host_us_max": hi, "gpu_us_per_call": g})
        print(f"{mode:9s} host {h:7.2f} us (min {lo:.2f} max {hi:.2f})  gpu {g:7.2f} us")
    res = {**device_info(),
           "cpu_model": cpu_model(),
           "python": platform.python_version(),
           "method": __doc__.split("Method:", 1)[1].split("    python3", 1)[0].strip(),
           "published_dgx_h100": {"source": "NVIDIA/TransformerEngine issue #2053 (2025-08-11), torch backend row",
                                  "cpu": "Intel Xeon Platinum 8480C", "host_us_per_call": 13.48,
                                  "gpu_us_per_call": 100.06, "gb200_host_us": 37.08, "gh200_host_us": 33.17},
           "rows": rows}
    res["ratio_dgx_h100_over_this_host"] = 13.48 / rows[0]["host_us_per_call"]
    write_measurement(res, out, t0)


if __name__ == "__main__":
    main()
