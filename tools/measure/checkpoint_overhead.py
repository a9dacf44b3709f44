#!/usr/bin/env python3
"""What full activation checkpointing costs beyond the forward it recomputes (issue 28.1: "full
activation checkpointing (what it costs beyond the recomputed FLOPs)").

A stack of LAYERS MPT blocks (eager_autocast_layer_h200.py's Block, BF16 parameters), forward then
backward with a fixed output gradient, plain and with every block wrapped in
torch.utils.checkpoint (non-reentrant, as llm-foundry's activation_checkpointing_reentrant: false
and torchtitan use; and reentrant, PyTorch's old default). Per layer, median of REPS steps after
WARM: forward and backward time. The checkpointed backward holds the block's forward again, so
    beyond = checkpointed backward - plain backward - plain forward
is what checkpointing adds besides the recomputed FLOPs (saved-tensor packing, the recompute's
own kernel launches and allocations, lost overlap).
Shapes: MPT-13B at 2 x 2,048 tokens, MPT-7B at 2 x 8,192 and MPT-30B at 1 x 8,192 (the MPT
suite's worst row).
    python3 tools/measure/checkpoint_overhead.py --out $OUT/h100-checkpoint-overhead.json
STATUS: run on the lent H100 80GB HBM3 (PyTorch 2.11), stored as
bench/data/h100-checkpoint-overhead.json. Reentrant checkpointing costs its recomputed forward and
nothing more (-0.01 / +1.57 / -0.05 ms a block for MPT-13B / 7B / 30B). Non-reentrant costs less
than its forward: -1.23 / -2.61 / -4.84 ms, about the block's last linear (FC2) forward, which
PyTorch's early stop (recompute ends once every tensor the backward saved is back) never reruns.
"""
import statistics

import torch
from torch.utils.checkpoint import checkpoint

from eager_autocast_layer_h200 import Block
from gemm_attention_h200 import device_info, start_measurement, write_measurement
from layer_fwd_bwd_h200 import Stack, time_stack_fwd_bwd

DEV = "cuda"
LAYERS, WARM, REPS = 4, 3, 10
SHAPES = {
    "mpt-13b_mbs2_s2048": dict(h=5120, heads=40, batch=2, seq=2048),
    "mpt-7b_mbs2_s8192": dict(h=4096, heads=32, batch=2, seq=8192),
    "mpt-30b_mbs1_s8192": dict(h=7168, heads=56, batch=1, seq=8192),
}


class Checkpointed(torch.nn.Module):
    def __init__(self, block, reentrant):
        super().__init__()
        self.block = block
        self.reentrant = reentrant

    def forward(self, x):
        return checkpoint(self.block, x, use_reentrant=self.reentrant)


def main():
    out, t0 = start_measurement()
    torch.manual_seed(0)
    res = {**device_info(), "layers": LAYERS, "warm": WARM, "reps": REPS, "method": __doc__, "rows": []}
    for name, sh in SHAPES.items():
        blocks = [Block(sh["h"], sh["heads"], torch.bfloat16) for _ in range(LAYERS)]
        x = torch.randn(sh["batch"], sh["seq"], sh["h"], device=DEV, dtype=torch.bfloat16, requires_grad=True)
        dy = torch.randn_like(x)
        times = {}
        for variant in ("plain", "checkpoint", "checkpoint_reentrant"):
            mods = blocks if variant == "plain" else [Checkpointed(b, variant.endswith("reentrant")) for b in blocks]
            f, b = time_stack_fwd_bwd(Stack(mods), x, dy, LAYERS, WARM, REPS)
            times[variant] = (statistics.median(f), statistics.median(b))
            torch.cuda.empty_cache()
        pf, pb = times["plain"]
        for variant, (f, b) in times.items():
            row = {"shape": name, **sh, "variant": variant, "forward_s": f, "backward_s": b,
                   "beyond_recompute_s": b - pb - pf if variant != "plain" else 0.0}
            res["rows"].append(row)
            print(row, flush=True)
        blocks = None
        torch.cuda.empty_cache()
    write_measurement(res, out, t0)


if __name__ == "__main__":
    main()
