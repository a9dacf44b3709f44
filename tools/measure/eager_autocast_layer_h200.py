#!/usr/bin/env python3
"""Measure what eager PyTorch's BF16 autocast over FP32 weights, and torch.compile, do to one
dense transformer block's forward+backward time (issue 28.1: the FSDP / Composer stacks
megasim reads fast). The block is MPT's (llm-foundry mpt_causal_lm: LayerNorm without bias, fused
QKV, causal SDPA attention, output projection, LayerNorm, FC1 4h, GELU, FC2, residual adds, no
biases), written as plain nn.Modules.

Variants, each a stack of LAYERS blocks, forward then backward with a fixed output gradient:
  bf16      parameters in BF16, no autocast (what FSDP's param_dtype=bf16 hands the block);
  autocast  parameters in FP32 under torch.autocast(bfloat16): every linear casts its weight to
            BF16 in the forward and the weight gradient is written back in FP32;
  compile   the bf16 variant through torch.compile (default mode): Inductor fuses the norms,
            GELU and residual adds.
Shapes: MPT-13B (hidden 5120, 40 heads, 2 sequences of 2,048), MPT-1B (2048, 16 heads, 14 x
2,048) and MPT-760M (1536, 12 heads, 24 x 2,048): the suite's short-sequence rows.

Timing: CUDA events around the stack's forward and backward, median of REPS steps after WARM
warm-ups, divided by LAYERS. Writes JSON to --out.
    python3 tools/measure/eager_autocast_layer_h200.py --out bench/data/h200-eager-autocast-layer.json

STATUS: run once, on an H100 80GB HBM3 (the lent machine, torch 2.11 / CUDA 13.0), stored as
bench/data/h100-eager-autocast-layer.json. Not yet run on an H200.
"""
import statistics

import torch
import torch.nn.functional as F

from gemm_attention_h200 import device_info, start_measurement, write_measurement
from layer_fwd_bwd_h200 import Stack, time_stack_fwd_bwd

DEV = "cuda"
LAYERS, WARM, REPS = 4, 3, 10
SHAPES = {
    "mpt-13b_mbs2_s2048": dict(h=5120, heads=40, batch=2, seq=2048),
    "mpt-1b_mbs14_s2048": dict(h=2048, heads=16, batch=14, seq=2048),
    "mpt-760m_mbs24_s2048": dict(h=1536, heads=12, batch=24, seq=2048),
}


class Block(torch.nn.Module):
    def __init__(self, h, heads, dtype):
        super().__init__()
        self.h, self.heads = h, heads
        self.ln1 = torch.nn.LayerNorm(h, bias=False, device=DEV, dtype=dtype)
        self.ln2 = torch.nn.LayerNorm(h, bias=False, device=DEV, dtype=dtype)
        self.qkv = torch.nn.Linear(h, 3 * h, bias=False, device=DEV, dtype=dtype)
        self.proj = torch.nn.Linear(h, h, bias=False, device=DEV, dtype=dtype)
        self.fc1 = torch.nn.Linear(h, 4 * h, bias=False, device=DEV, dtype=dtype)
        self.fc2 = torch.nn.Linear(4 * h, h, bias=False, device=DEV, dtype=dtype)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, h // self.heads).unbind(2)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + self.proj(o.transpose(1, 2).reshape(b, s, h))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def main():
    out, t0 = start_measurement()
    torch.manual_seed(0)
    res = {**device_info(), "layers": LAYERS, "warm": WARM, "reps": REPS, "method": __doc__, "rows": []}
    for name, sh in SHAPES.items():
        h, heads, b, s = sh["h"], sh["heads"], sh["batch"], sh["seq"]
        for variant in ("bf16", "autocast", "compile"):
            dtype = torch.float32 if variant == "autocast" else torch.bfloat16
            blocks = [Block(h, heads, dtype) for _ in range(LAYERS)]
            if variant == "compile":
                blocks = [torch.compile(m) for m in blocks]
            stack = Stack(blocks, autocast=variant == "autocast")
            x = torch.randn(b, s, h, device=DEV, dtype=torch.bfloat16, requires_grad=True)
            dy = torch.randn_like(x)
            try:
                f, bw = time_stack_fwd_bwd(stack, x, dy, LAYERS, WARM, REPS)
                row = {"shape": name, **sh, "variant": variant, "forward_s": statistics.median(f),
                       "backward_s": statistics.median(bw)}
            except Exception as e:  # noqa: BLE001 - record what failed and go on
                row = {"shape": name, **sh, "variant": variant, "error": repr(e)[:300]}
            res["rows"].append(row)
            print(row, flush=True)
            del blocks, stack
            torch.cuda.empty_cache()
    write_measurement(res, out, t0)


if __name__ == "__main__":
    main()
