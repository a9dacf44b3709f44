#!/usr/bin/env python3
"""The optimizer step over FP32 master weights, by implementation (issue 28.1: "the optimizer step
(fused vs foreach AdamW over FP32 master weights)").

Parameters: TENSORS FP32 tensors of ELEMS elements each (1.0e9 in all; about one rank's shard of
a 13B model under FULL_SHARD on 8 GPUs, in FSDP1's one flat parameter per block), FP32
gradients, Adam's two FP32 moments. Implementations:
  fused      torch.optim.AdamW(fused=True): one multi-tensor kernel (what Apex / Transformer
             Engine FusedAdam do for Megatron, and torchtitan's default);
  foreach    torch.optim.AdamW(foreach=True): PyTorch's default on CUDA, horizontally fused
             _foreach_ ops, one per arithmetic step;
  for-loop   torch.optim.AdamW(foreach=False, fused=False): the same steps per tensor;
  composer   Composer's DecoupledAdamW.adamw loop (composer/optim/decoupled_weight_decay.py, which
             llm-foundry's MPT yamls name as decoupled_adamw), its op sequence per tensor:
             param *= 1 - wd; m = m*b1 + g*(1-b1); v = v*b2 + g*g*(1-b2); denom = sqrt(v) / c2 + eps;
             param += -lr/c1 * m / denom; with the step count read on the host per tensor.
Per implementation: the median step time over REPS steps after WARM, and the HBM bytes per
parameter it equals at the same run's elementwise-add rate (bytes / add rate / parameters).
    python3 tools/measure/optimizer_step.py --out $OUT/h100-optimizer-step.json
STATUS: run on the lent H100 80GB HBM3, stored as bench/data/h100-optimizer-step.json: fused
10.96 ms (33.5 B per parameter at the add rate), foreach 30.12 (92.1), for-loop 27.66 (84.6),
composer 31.04 (94.9).
"""
import math
import statistics
import time

import torch

from gemm_attention_h200 import device_info, start_measurement, write_measurement

TENSORS, ELEMS = 40, 25_000_000
WARM, REPS = 2, 6


def composer_step(params, grads, ms, vs, steps, lr=1e-4, b1=0.9, b2=0.95, eps=1e-8, wd=1e-5):
    for p, g, m, v, s in zip(params, grads, ms, vs, steps):
        s += 1
        step = s.item()
        p.mul_(1 - wd)
        c1, c2 = 1 - b1 ** step, 1 - b2 ** step
        m.mul_(b1).add_(g, alpha=1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        denom = (v.sqrt() / math.sqrt(c2)).add_(eps)
        p.addcdiv_(m, denom, value=-lr / c1)


def add_rate_Bps():
    a = torch.randn(ELEMS * 4, device="cuda")
    b = torch.randn_like(a)
    c = torch.empty_like(a)
    for _ in range(3):
        torch.add(a, b, out=c)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(20):
        torch.add(a, b, out=c)
    torch.cuda.synchronize()
    return 20 * 12 * a.numel() / (time.perf_counter() - t0)


def timed_steps(step):
    times = []
    for i in range(WARM + REPS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        if i >= WARM:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    out, t0 = start_measurement()
    rate = add_rate_Bps()
    n = TENSORS * ELEMS
    res = {**device_info(), "tensors": TENSORS, "elements_per_tensor": ELEMS, "add_rate_Bps": rate,
           "method": __doc__, "rows": []}
    for impl in ("fused", "foreach", "for-loop", "composer"):
        params = [torch.randn(ELEMS, device="cuda", requires_grad=True) for _ in range(TENSORS)]
        for p in params:
            p.grad = torch.randn_like(p)
        if impl == "composer":
            ms = [torch.zeros_like(p) for p in params]
            vs = [torch.zeros_like(p) for p in params]
            steps = [torch.zeros((), device="cuda") for _ in params]
            grads = [p.grad for p in params]
            with torch.no_grad():
                t = timed_steps(lambda: composer_step(params, grads, ms, vs, steps))
        else:
            kw = {"fused": dict(fused=True), "foreach": dict(foreach=True),
                  "for-loop": dict(foreach=False, fused=False)}[impl]
            opt = torch.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.95), weight_decay=1e-5, **kw)
            t = timed_steps(opt.step)
            opt = None
        row = {"implementation": impl, "step_s": t, "ns_per_param": 1e9 * t / n,
               "equivalent_bytes_per_param": t * rate / n}
        res["rows"].append(row)
        print(row, flush=True)
        params = None
        torch.cuda.empty_cache()
    write_measurement(res, out, t0)


if __name__ == "__main__":
    main()
