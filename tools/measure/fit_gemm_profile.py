#!/usr/bin/env python3
"""Fit megasim's GEMM efficiency model (src/hw/gemm_model.cpp) to measured GEMM rows.

Model, the same for every GPU (only parameters differ):
  t = launch_s + max(flops / (peak * e_max * u_pad * u_wave * r_k), bytes / (bw * e_mem))
  u_pad  = m*n / (ceil(m/Tm)*Tm * ceil(n/Tn)*Tn)                    (tile padding)
  W      = ceil(m/Tm)*ceil(n/Tn) / SMs;  u_wave = 1 - w*(1 - W/ceil(W))  (wave tail, softened by w)
  r_k    = k / (k + k_half)                                          (per-tile prologue/epilogue)
Fit: grid search minimising the RMS of log(t_model/t_measured) over rows with t >= 40 us (shorter
rows are bound by PyTorch's host dispatch, ~17 us per matmul here) and n, k multiples of 8
(unaligned shapes fall back to non-TMA kernels, which megasim does not model: Megatron pads).
  python3 tools/measure/fit_gemm_profile.py bench/data/h200-kernels.json
FP8 (the `gemm_fp8` block; E4M3 operands of 1 byte, the FP8 dense peak, the FP8 column of
fp8_gemm_h200.py's file; the BF16 column of that file refits the BF16 block as a cross-check):
  python3 tools/measure/fit_gemm_profile.py bench/data/h200-fp8-gemm.json --time-key fp8_time_s --fp8
  python3 tools/measure/fit_gemm_profile.py bench/data/h200-fp8-gemm.json --time-key bf16_time_s
"""
import argparse, json, math

ap = argparse.ArgumentParser()
ap.add_argument("file")
ap.add_argument("--time-key", default="time_s", help="the rows' time field")
ap.add_argument("--fp8", action="store_true", help="FP8 peak (1979 TFLOP/s) and 1-byte operands")
args = ap.parse_args()
d = json.load(open(args.file))
PEAK = 1978.9e12 if args.fp8 else 989.4e12  # H100/H200 SXM dense peaks
OPERAND_BYTES = 1.0 if args.fp8 else 2.0
BW, SMS = 4.8e12, d["sm_count"]
E_MEM = 0.89  # copy bandwidth fraction measured in h200-kernels.json (4.28 TB/s of 4.8)
LAUNCH = 0.0
TK = args.time_key
rows = [r for r in d["gemm"] if r[TK] >= 40e-6 and r["n"] % 8 == 0 and r["k"] % 8 == 0]

def model(r, e, kh, w, tm, tn):
    m, n, k = r["m"], r["n"], r["k"]
    tiles_m, tiles_n = math.ceil(m / tm), math.ceil(n / tn)
    u_pad = m * n / (tiles_m * tm * tiles_n * tn)
    W = tiles_m * tiles_n / SMS
    u_wave = 1 - w * (1 - W / math.ceil(W))
    r_k = k / (k + kh)
    tc = 2.0 * m * n * k / (PEAK * e * u_pad * u_wave * r_k)
    tm_ = (OPERAND_BYTES * (m * k + k * n) + 2.0 * m * n) / (BW * E_MEM)
    return LAUNCH + max(tc, tm_)

best = None
for tm, tn in ((128, 128), (128, 256), (256, 128)):
    for w in [i / 10 for i in range(0, 11)]:
        for kh in range(0, 2049, 32):
            for e in [0.50 + i * 0.005 for i in range(61)]:
                err = [math.log(model(r, e, kh, w, tm, tn) / r[TK]) for r in rows]
                rms = math.sqrt(sum(x * x for x in err) / len(err))
                if best is None or rms < best[0]:
                    best = (rms, e, kh, w, tm, tn, sum(err) / len(err), max(map(abs, err)))
rms, e, kh, w, tm, tn, bias, worst = best
print(json.dumps({"rows": len(rows), "e_max": round(e, 4), "k_half": kh, "wave_weight": w,
                  "tile_m": tm, "tile_n": tn, "rms_log_error": round(rms, 4),
                  "mean_log_error": round(bias, 4), "max_abs_log_error": round(worst, 4),
                  "measured_max_tflops": max(2.0 * r["m"] * r["n"] * r["k"] / r[TK] / 1e12 for r in d["gemm"])}))
