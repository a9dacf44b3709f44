#!/usr/bin/env python3
"""Fit a fused-attention block of a megasim hardware profile to measured kernel times.

The model (src/hw/kernel_model.cpp, attention_time_s, fused kernels):
  t = latency + flops / (peak * eff),  eff = max_efficiency * 2m / (2m + seq_half) * min(1, d/128)^head_dim_alpha
with m the mean attended span per query ((s+1)/2 for causal self-attention), flops = 4*b*h*d*s(s+1)/2
forward and 2.5x that backward (backward time = fwd+bwd time - fwd time). Grid search minimising
the RMS of log(t_model / t_measured) over the rows of one backend without dropout. With dropout
rows, dropout_efficiency is the geometric mean, over the shapes measured both ways, of
t(no dropout) / t(dropout): the factor the efficiency keeps when attention dropout is on.

  python3 tools/measure/fit_attention.py bench/data/h200-cudnn-attention.json --backend cudnn
"""
import argparse
import json
import math

PEAK = 989e12   # H100/H200 SXM dense BF16 (configs/gpus)
LATENCY = 3.5e-6  # configs/hw/hopper.json gemm.latency_s, the fused kernels' fixed cost


def flops(r, backward):
    f = 4.0 * r["batch"] * r["heads"] * r["head_dim"] * r["seq"] * (r["seq"] + 1) / 2
    return 2.5 * f if backward else f


def measured(r, backward):
    return r["fwd_bwd_time_s"] - r["fwd_time_s"] if backward else r["fwd_time_s"]


def model(r, backward, e, s_half, alpha):
    span2 = r["seq"] + 1.0
    eff = e * span2 / (span2 + s_half) * min(1.0, r["head_dim"] / 128.0) ** alpha
    return LATENCY + flops(r, backward) / (PEAK * eff)


def fit(rows, backward):
    best = None
    for e200 in range(20, 200):
        e = e200 / 200
        for s_half in range(0, 4001, 16):
            for a100 in range(0, 201, 2):
                alpha = a100 / 100
                err = [math.log(model(r, backward, e, s_half, alpha) / measured(r, backward)) for r in rows]
                rms = math.sqrt(sum(x * x for x in err) / len(err))
                if best is None or rms < best[0]:
                    best = (rms, e, s_half, alpha, max(abs(x) for x in err))
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("measurement")
    ap.add_argument("--backend", required=True)
    ap.add_argument("--section", default="attention")
    args = ap.parse_args()
    d = json.load(open(args.measurement))
    rows = [r for r in d[args.section] if r["backend"] == args.backend and "error" not in r]
    for backward in (False, True):
        rms, e, s_half, alpha, worst = fit(rows, backward)
        print(f"{'backward' if backward else 'forward'}: max_efficiency {e:.2f} seq_half {s_half} "
              f"head_dim_alpha {alpha:.2f}  (RMS {100 * rms:.1f}%, worst {100 * worst:.1f}%, {len(rows)} rows)")
    if "attention_dropout" in d:
        key = lambda r: (r["batch"], r["heads"], r["seq"], r["head_dim"])
        plain = {key(r): r for r in rows}
        drop = [r for r in d["attention_dropout"] if r["backend"] == args.backend and "error" not in r]
        for backward in (False, True):
            logs = [math.log(measured(plain[key(r)], backward) / measured(r, backward)) for r in drop if key(r) in plain]
            if logs:
                print(f"{'backward' if backward else 'forward'} dropout_efficiency "
                      f"{math.exp(sum(logs) / len(logs)):.3f} (range "
                      f"{math.exp(min(logs)):.3f}-{math.exp(max(logs)):.3f}, {len(logs)} shapes)")


if __name__ == "__main__":
    main()
