#!/usr/bin/env python3
"""Do kernel rates timed in short bursts hold when the GPU computes for minutes, as a training
run does? Hopper SXM parts run under a 700 W board cap, so the SM clock a dense GEMM gets falls
as power and temperature settle; megasim's kernel rates were timed in runs of 7-35 s.

Phases, with nvidia-smi logging SM clock, power and temperature every 200 ms throughout:
  idle        15 s, nothing queued (the GPU cools to its idle state)
  burst       the harness of gemm_attention_h200.py (median of 12 samples of ~2 ms) on a BF16
              and an FP8 GEMM, then the median of 10 layer steps (forward + backward of a stack
              of 2 Llama 3.1 70B TP-4 CP-2 layer shards, llama_layer_h200.py's, cuDNN attention)
  sustained   the same layer step back to back for SUSTAIN_S seconds, every step timed with
              CUDA events and read without stalling the queue; the BF16 GEMM probe is re-timed
              every 20 s inside the run (no idle before it)
  idle        20 s, then the burst measurements again
  fp8 loop    the FP8 GEMM back to back for FP8_S seconds (each ~2 ms sample timed)

Output: the ratio of steady-state (last third of the samples) to burst time per workload; the
samples and the clock log stored as medians per 5 s (clock: per 1 s) window.
    python3 tools/measure/sustained_clock_h200.py --out bench/data/h200-sustained-clock.json
"""
import os
import statistics
import subprocess
import tempfile
import time

import torch
import torch.nn.attention

from gemm_attention_h200 import device_info, start_measurement, timed, write_measurement
from layer_fwd_bwd_h200 import time_stack_fwd_bwd
from llama_layer_h200 import DEV, LAYERS, SHAPES, LlamaShard

SUSTAIN_S, FP8_S, PROBE_EVERY_S = 150.0, 60.0, 20.0
GEMM = (8192, 8192, 8192)
SMI_FIELDS = "timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active"


def start_clock_log():
    f = tempfile.NamedTemporaryFile("w+", suffix=".csv", delete=False)
    p = subprocess.Popen(["nvidia-smi", f"--query-gpu={SMI_FIELDS}", "--format=csv,noheader,nounits",
                          "-lms", "200"], stdout=f, stderr=subprocess.DEVNULL)
    return p, f.name


def read_clock_log(p, path, t0):
    p.terminate()
    p.wait(timeout=10)
    rows = []
    with open(path) as f:
        for line in f:
            parts = [x.strip() for x in line.split(",")]
            if len(parts) != 6:
                continue
            try:
                ts = time.mktime(time.strptime(parts[0].split(".")[0], "%Y/%m/%d %H:%M:%S"))
                ts += float("0." + parts[0].split(".")[1]) if "." in parts[0] else 0.0
                rows.append({"t_s": round(ts - t0, 3), "sm_mhz": float(parts[1]), "mem_mhz": float(parts[2]),
                             "power_w": float(parts[3]), "temp_c": float(parts[4]), "reasons": parts[5]})
            except ValueError:
                continue
    os.unlink(path)
    return rows


def gemm_fns():
    m, n, k = GEMM
    a = torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(k, n, device=DEV, dtype=torch.bfloat16)
    c = torch.empty(m, n, device=DEV, dtype=torch.bfloat16)
    a8 = a.to(torch.float8_e4m3fn)
    b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()  # column-major second operand
    one = torch.ones((), device=DEV)
    return (lambda: torch.mm(a, b, out=c)), (lambda: torch._scaled_mm(a8, b8, one, one, out_dtype=torch.bfloat16))


def layer_stack():
    shape = SHAPES["llama3.1-70b_tp4_cp2"]
    torch.manual_seed(0)
    stack = torch.nn.Sequential(*[LlamaShard(**shape) for _ in range(LAYERS)])
    for layer in stack:
        layer.backend = torch.nn.attention.SDPBackend.CUDNN_ATTENTION
    x = torch.randn(shape["tokens"], shape["h"], device=DEV, dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn(shape["tokens"], shape["h"], device=DEV, dtype=torch.bfloat16)
    return stack, x, dy


def burst(bf16, fp8, stack, x, dy, t0):
    fwd, bwd = time_stack_fwd_bwd(stack, x, dy, LAYERS, 3, 10)
    return {"t_s": round(time.time() - t0, 3), "bf16_gemm_s": timed(bf16), "fp8_gemm_s": timed(fp8),
            "layer_step_s": statistics.median(f + b for f, b in zip(fwd, bwd)) * LAYERS}


def sustained_layer(stack, x, dy, bf16, t0):
    """Layer steps back to back; events read in arrears so the queue never drains."""
    steps, probes, pending = [], [], []
    end = time.time() + SUSTAIN_S
    next_probe = time.time() + PROBE_EVERY_S
    while time.time() < end:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        stack(x).backward(dy)
        b.record()
        stack.zero_grad(set_to_none=True)
        x.grad = None
        pending.append((a, b))
        while len(pending) > 3:  # keep three steps queued
            a0, b0 = pending.pop(0)
            b0.synchronize()
            steps.append({"t_s": round(time.time() - t0, 3), "step_s": a0.elapsed_time(b0) / 1e3})
        if time.time() >= next_probe:
            probes.append({"t_s": round(time.time() - t0, 3), "bf16_gemm_s": timed(bf16)})
            next_probe += PROBE_EVERY_S
    for a0, b0 in pending:
        b0.synchronize()
        steps.append({"t_s": round(time.time() - t0, 3), "step_s": a0.elapsed_time(b0) / 1e3})
    return steps, probes


def sustained_gemm(fn, t0, seconds):
    samples = []
    end = time.time() + seconds
    while time.time() < end:
        samples.append({"t_s": round(time.time() - t0, 3), "gemm_s": timed(fn, reps=1, warm=0)})
    return samples


def per_window(rows, window_s=5.0):
    """Samples folded into medians per window of host time (what the stored file keeps)."""
    out, bucket = [], []
    for r in rows:
        if bucket and r["t_s"] - bucket[0]["t_s"] >= window_s:
            out.append(fold(bucket))
            bucket = []
        bucket.append(r)
    if bucket:
        out.append(fold(bucket))
    return out


def fold(bucket):
    """Median of each number, the most frequent value of each text field (clock event reasons)."""
    out = {"t_s": bucket[0]["t_s"], "samples": len(bucket)}
    for k, v in bucket[0].items():
        if k != "t_s":
            vals = [r[k] for r in bucket]
            out[k] = statistics.median(vals) if isinstance(v, float) else statistics.mode(vals)
    return out


def steady(rows, key):
    """Median of the last third of a sustained run's samples."""
    tail = rows[len(rows) * 2 // 3:]
    return statistics.median(r[key] for r in tail)


def main():
    out, t0 = start_measurement()
    smi, log_path = start_clock_log()
    res = {**device_info(), "method": __doc__.split("Phases, ")[1].split("\n    python3")[0],
           "gemm_mnk": GEMM, "layer": "llama3.1-70b_tp4_cp2 (llama_layer_h200.py), cuDNN attention"}
    bf16, fp8 = gemm_fns()
    stack, x, dy = layer_stack()
    time_stack_fwd_bwd(stack, x, dy, LAYERS, 3, 1)  # compile and warm up before the idle phase
    torch.cuda.synchronize()
    time.sleep(15)
    res["burst_before"] = burst(bf16, fp8, stack, x, dy, t0)
    print("burst before", res["burst_before"], flush=True)
    res["layer_steps"], res["bf16_probes"] = sustained_layer(stack, x, dy, bf16, t0)
    print("sustained layer done", len(res["layer_steps"]), flush=True)
    time.sleep(20)
    res["burst_after_idle"] = burst(bf16, fp8, stack, x, dy, t0)
    print("burst after", res["burst_after_idle"], flush=True)
    res["fp8_loop"] = sustained_gemm(fp8, t0, FP8_S)
    res["bf16_loop"] = sustained_gemm(bf16, t0, FP8_S)
    res["clock_log"] = read_clock_log(smi, log_path, t0)
    b = res["burst_before"]
    res["steady_over_burst_time"] = {
        "layer_step": steady(res["layer_steps"], "step_s") / b["layer_step_s"],
        "bf16_gemm_probe": steady(res["bf16_probes"], "bf16_gemm_s") / b["bf16_gemm_s"],
        "fp8_gemm_loop": steady(res["fp8_loop"], "gemm_s") / b["fp8_gemm_s"],
        "bf16_gemm_loop": steady(res["bf16_loop"], "gemm_s") / b["bf16_gemm_s"],
    }
    print("steady/burst", res["steady_over_burst_time"], flush=True)
    for key in ("layer_steps", "fp8_loop", "bf16_loop", "clock_log"):
        res[key] = per_window(res[key], 1.0 if key == "clock_log" else 5.0)
    write_measurement(res, out, t0)


if __name__ == "__main__":
    main()
