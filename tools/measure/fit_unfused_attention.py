#!/usr/bin/env python3
"""Fit the one bandwidth figure of megasim's unfused-attention model to measured rows.

Model (src/hw/kernel_model.cpp, attention_time_s with kind Unfused): every kernel of Megatron's
core attention is bound by its passes over the b*a*s*span score matrix (2-byte elements),
  t = passes * score_bytes / (bw * f)
with passes derived from the kernel sequence (not fitted):
  forward  6.0 = QK^T writes the scores (1) + Megatron's fused causal softmax reads each row's
                 unmasked prefix and writes the row (1.5) + dropout reads, writes and stores a
                 1-byte mask (2.5) + probabilities x V reads (1)
  backward 8.5 = dP = dO V^T writes (1) + dropout backward reads dP and the mask, writes (2.5)
                 + the fused softmax backward reads the prefixes of P and dP, writes dS (2)
                 + dQ = dS K and dK = dS^T Q read dS (2) + dV = P^T dO reads P (1)
f (the fraction of datasheet bandwidth these kernels reach) is the single fitted figure: least
squares in log time over the rows with the Megatron-style softmax and dropout 0.1 (Megatron's GPT
default) that are device-bound: a score matrix of at least 256 MB (smaller rows are bound by
PyTorch's autograd and Triton's launch overhead on the host; there the backward measures slower
than torch's own softmax).
  python3 tools/measure/fit_unfused_attention.py bench/data/h200-unfused-attention.json
"""
import json, math, sys

BW = 4.8e12  # H200 HBM3e datasheet
d = json.load(open(sys.argv[1]))
rows = [r for r in d["core_attention"]
        if r["softmax"] == "megatron_causal" and r["dropout"] > 0 and r["score_bytes"] >= 2.5e8]
PASSES = {"fwd_time_s": 6.0, "bwd_time_s": 8.5}
logs = []
for r in rows:
    for key, p in PASSES.items():
        logs.append(math.log(p * r["score_bytes"] / BW / r[key]))
f = math.exp(sum(logs) / len(logs))
err = [math.log(p * r["score_bytes"] / (BW * f) / r[key]) for r in rows for key, p in PASSES.items()]
print(json.dumps({"rows": len(rows), "samples": len(err), "pass_bw_fraction": round(f, 3),
                  "rms_log_error": round(math.sqrt(sum(e * e for e in err) / len(err)), 3),
                  "max_abs_log_error": round(max(map(abs, err)), 3)}))
