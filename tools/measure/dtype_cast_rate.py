#!/usr/bin/env python3
"""HBM rate of the copies PyTorch FSDP stages every micro-batch (model/fsdp_staging_ops.cpp),
against the plain elementwise add the hardware profile's elementwise_bw_fraction comes from.

Kernels, over tensors of 64M-1G elements (each sample timed with timed(): back-to-back launches
between CUDA events, median of 12):
  cast_bf16_to_fp32   g.to(torch.float32)             FSDP1's gradient cast, FSDP2's RS copy-in
  cast_fp32_to_bf16   p.to(torch.bfloat16)            FSDP1's shard cast before the gather
  div_fp32_inplace    g.div_(2.0)                     FSDP1's pre-divide
  copy_bf16           out.copy_(x)                    FSDP2's all-gather copy-out
  add_bf16            torch.add(a, b, out=c)          the profile's elementwise reference
Bytes counted: every element read and written once at its dtype. The rate is bytes / time, and
the fraction is of the GPU's datasheet HBM bandwidth (given with --peak-Bps; 3.35e12 H100 SXM,
4.8e12 H200).
    python3 tools/measure/dtype_cast_rate.py --peak-Bps 3.35e12 --out $OUT/h100-dtype-cast-rate.json
STATUS: run on the lent H100 80GB HBM3, stored as bench/data/h100-dtype-cast-rate.json.
"""
import argparse
import time

import torch

from gemm_attention_h200 import device_info, timed, write_measurement

SIZES = (1 << 26, 1 << 28, 1 << 30)


def kernels(n):
    bf = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    bf2 = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    out_bf = torch.empty(n, device="cuda", dtype=torch.bfloat16)
    fp = torch.randn(n, device="cuda", dtype=torch.float32)
    return {
        "cast_bf16_to_fp32": (lambda: bf.to(torch.float32), 6 * n),
        "cast_fp32_to_bf16": (lambda: fp.to(torch.bfloat16), 6 * n),
        "div_fp32_inplace": (lambda: fp.div_(1.0000001), 8 * n),
        "copy_bf16": (lambda: out_bf.copy_(bf), 4 * n),
        "add_bf16": (lambda: torch.add(bf, bf2, out=out_bf), 6 * n),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--peak-Bps", type=float, required=True)
    args = ap.parse_args()
    t0 = time.time()
    res = {**device_info(), "peak_Bps": args.peak_Bps, "method": __doc__, "rows": []}
    for n in SIZES:
        for name, (fn, nbytes) in kernels(n).items():
            t = timed(fn)
            row = {"kernel": name, "elements": n, "bytes": nbytes, "time_s": t, "Bps": nbytes / t,
                   "fraction_of_peak": nbytes / t / args.peak_Bps}
            res["rows"].append(row)
            print(row, flush=True)
        torch.cuda.empty_cache()
    write_measurement(res, args.out, t0)


if __name__ == "__main__":
    main()
