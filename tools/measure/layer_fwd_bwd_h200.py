"""Forward and backward time of one transformer layer of a TP-8 shard, kernels only (no TP
communication), eager PyTorch bf16 with SDPA flash attention: the compute part of what
Korthikanti et al. 2022 Table 4 times per layer, measured on the device to check megasim's
split of a layer's kernel time between forward and backward (the backward's weight-gradient
GEMMs use other operand layouts than the forward, and autograd adds kernels of its own).

Shapes: the 175B shard (hidden 12288, 16 local heads of 96, FFN 6144, micro-batch 1) and the
22B shard (hidden 6144, 8 local heads of 96, FFN 3072, micro-batch 4), sequence 2048.
Timing: a stack of 4 layers (so kernels queue back to back and the host runs ahead); CUDA
events around the stack's forward and around its backward (the gradient of the output is a
fixed random tensor); median of 20 timed steps after 5 warm-ups, per layer.
    python3 tools/measure/layer_fwd_bwd_h200.py --out bench/data/h200-layer-fwd-bwd.json
"""
import statistics

import torch

from gemm_attention_h200 import device_info, start_measurement, write_measurement
from tp8_shard_layer import DEV, DT, ShardLayer

SHAPES = {
    "175b_tp8_mb1": dict(h=12288, heads=16, d=96, ffn=6144, batch=1),
    "22b_tp8_mb4": dict(h=6144, heads=8, d=96, ffn=3072, batch=4),
}
LAYERS, WARM, REPS = 4, 5, 20


class Stack(torch.nn.Module):
    """Blocks applied in turn, each called as block(x, *args), optionally under BF16 autocast:
    the `stack` time_stack_fwd_bwd takes, for blocks that need more than x."""

    def __init__(self, blocks, args=(), autocast=False):
        super().__init__()
        self.blocks = torch.nn.ModuleList(blocks)
        self.args = args
        self.autocast = autocast

    def forward(self, x):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.autocast):
            for b in self.blocks:
                x = b(x, *self.args)
        return x


def time_stack_fwd_bwd(stack, x, dy, layers, warm, reps):
    """Per-layer forward and backward seconds of `stack` (`layers` layers) on input x with output
    gradient dy: CUDA events around the stack's forward and its backward, `reps` timed steps
    after `warm` warm-ups. Returns the two lists of samples."""
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
    fwd, bwd = [], []
    for i in range(warm + reps):
        torch.cuda.synchronize()
        ev[0].record()
        y = stack(x)
        ev[1].record()
        y.backward(dy)
        ev[2].record()
        torch.cuda.synchronize()
        if i >= warm:
            fwd.append(ev[0].elapsed_time(ev[1]) / 1e3 / layers)
            bwd.append(ev[1].elapsed_time(ev[2]) / 1e3 / layers)
        stack.zero_grad(set_to_none=True)
        x.grad = None
    return fwd, bwd


def time_layer(shape):
    torch.manual_seed(0)
    stack = torch.nn.Sequential(*[ShardLayer(**shape) for _ in range(LAYERS)])
    tokens = shape["batch"] * 2048
    x = torch.randn(tokens, shape["h"], device=DEV, dtype=DT, requires_grad=True)
    dy = torch.randn(tokens, shape["h"], device=DEV, dtype=DT)
    fwd, bwd = time_stack_fwd_bwd(stack, x, dy, LAYERS, WARM, REPS)
    return {"forward_s": statistics.median(fwd), "backward_s": statistics.median(bwd),
            "forward_s_min": min(fwd), "backward_s_min": min(bwd)}


def main():
    out, t0 = start_measurement()
    res = {**device_info(), "method": __doc__.split("Timing: ")[1].split("\n    python3")[0],
           "layers": {}}
    for name, shape in SHAPES.items():
        res["layers"][name] = {**shape, "seq": 2048, **time_layer(shape)}
        print(name, res["layers"][name], flush=True)
    write_measurement(res, out, t0)


if __name__ == "__main__":
    main()
