#!/usr/bin/env python3
"""Check megasim's grouped-GEMM time model against the measured MoE expert GEMMs.

The model (src/hw/kernel_model.cpp grouped_gemm_time_s): each expert's problem pays its own tile
padding and k ramp with the hardware profile's GEMM parameters, and the waves are counted over
every expert's tiles with gemm.grouped_wave_weight; the time is the larger of that and the
operand bytes at copy bandwidth, plus the kernel latency. Data: bench/data/h100-grouped-gemm.json
(torch._grouped_mm rows, balanced splits, forward), measured on an H100 80GB HBM3 (989.4 TFLOP/s
BF16, 3.35 TB/s), timed against configs/hw/hopper.json's figures.

Usage: tools/measure/check_grouped_gemm_model.py [WAVE_WEIGHT]   (default: the profile's)
Prints predicted/measured by tokens-per-expert band.
"""
import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PEAK_FLOPS = 989.4e12   # H100 SXM dense BF16 (datasheet)
HBM_BPS = 3.35e12       # H100 SXM HBM3 (datasheet)


def value(x):
    return x["value"] if isinstance(x, dict) else x


def grouped_time_s(rows, n, k, g, copy_fraction, wave_weight):
    compute = tiles = nbytes = 0.0
    for m in rows:
        tm, tn = math.ceil(m / g["tile_m"]), math.ceil(n / g["tile_n"])
        u_pad = m * n / (tm * g["tile_m"] * tn * g["tile_n"])
        r_k = k / (k + g["k_half"])
        compute += 2.0 * m * n * k / (PEAK_FLOPS * g["max_efficiency"] * u_pad * r_k)
        tiles += tm * tn
        nbytes += 2.0 * (m * k + k * n) + 2.0 * m * n
    waves = tiles / g["sm_count"]
    compute /= 1.0 - wave_weight * (1.0 - waves / math.ceil(waves))
    return g["latency_s"] + max(compute, nbytes / (HBM_BPS * copy_fraction))


def main():
    hw = json.loads((ROOT / "configs/hw/hopper.json").read_text())
    g = {key: value(v) for key, v in hw["gemm"].items()}
    copy_fraction = value(hw["memory"]["copy_bw_fraction"])
    wave_weight = float(sys.argv[1]) if len(sys.argv) > 1 else g["grouped_wave_weight"]
    data = json.loads((ROOT / "bench/data/h100-grouped-gemm.json").read_text())
    bands = {}
    for r in data["results"]:
        if r["path"] != "grouped_mm" or r["split"] != "balanced" or r["pass"] != "fprop":
            continue
        t = r["tokens_per_expert"]
        pred = grouped_time_s([t] * r["e_local"], r["n"], r["k"], g, copy_fraction, wave_weight)
        band = "tokens < 1024" if t < 1024 else "tokens >= 1024"
        bands.setdefault(band, []).append(pred / (r["time_us"] * 1e-6))
    print(f"grouped_wave_weight {wave_weight}")
    for band, ratios in sorted(bands.items()):
        ratios.sort()
        print(f"  {band:15s} {len(ratios):4d} rows  predicted/measured median {statistics.median(ratios):.3f}"
              f"  p10 {ratios[len(ratios) // 10]:.3f}  p90 {ratios[9 * len(ratios) // 10]:.3f}")


if __name__ == "__main__":
    main()
