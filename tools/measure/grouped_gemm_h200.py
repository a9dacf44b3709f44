#!/usr/bin/env python3
"""Measure MoE expert-FFN GEMM efficiency against tokens per expert on one Hopper GPU, for
megasim's Mixture-of-Experts layers (issue 26 item 3): the data a grouped-GEMM model is fitted to.

STATUS: run once, on an H100 80GB HBM3 (the lent machine; torch 2.11 / CUDA 13.0, no Transformer
Engine or grouped_gemm package, torch._grouped_mm = CUTLASS sm90 grouped kernel), stored as
bench/data/h100-grouped-gemm.json (5,160 rows, 159 s); run again on another lent H100 on 2026-12-06
(bench/data/h100-grouped-gemm-run2.json: every row within -4.3%..+4.5% of the first at p10-p90,
median ratio 1.002). Not yet run on an H200: run it there and store the output as
bench/data/h200-grouped-gemm.json:
  cd tools/measure && python3 grouped_gemm_h200.py --out $OUT/h200-grouped-gemm.json --deadline-s 380

Shapes: the routed experts of DeepSeek-V3 (hidden 7168, moe_ffn 2048), Mixtral 8x7B (4096, 14336),
Qwen3-235B-A22B (4096, 1536), GPT-OSS-120B (2880, 2880) and Qwen3-30B-A3B (2048, 768), all gated
SwiGLU experts: FC1 is [t x hidden] @ [hidden x 2*moe_ffn], FC2 [t x moe_ffn] @ [moe_ffn x hidden].
Weights are stored as nn.Linear / TEGroupedLinear keep them, [E, out, in], and used transposed
("TN"). E_local (experts on one EP rank) in 1..32 (not above the model's expert count), tokens per
expert t in 16..8192, with E_local*t <= 65536 routed tokens per rank (the time budget; DeepSeek-V3
at seq 4096, top-8 gives 32768 on average). BF16 in, BF16 out.

Paths (forward, "fprop"):
  loop_eager  E_local torch.mm calls launched from Python, as Megatron's SequentialMLP does: for small
              GEMMs this is bound by PyTorch's host dispatch (~10-17 us a call), as in training;
  loop_graph  the same calls captured in a CUDA graph and replayed: the device time of the loop;
  bmm         one torch.bmm over [E_local, t, k] (balanced split only), in a CUDA graph;
  grouped_mm  torch._grouped_mm (PyTorch's Hopper grouped GEMM, 2-D activations x 3-D weights with
              int32 end offsets), in a CUDA graph, for the balanced split and for imbalanced splits
              whose per-expert counts are a deterministic log-normal draw (fixed seed) with
              coefficient of variation 0.5 and 1.0 summing to E_local*t (DeepEP #393: real
              DeepSeek-V3 per-rank counts fit a log-normal best). Each row records the counts' max.
Backward-shaped GEMMs, balanced split, per expert (the nn.Linear convention):
  dgrad  dX[t x K] = dY[t x N] @ W[N x K]   (loop_graph, grouped_mm)
  wgrad  dW[N x K] = dY^T[N x t] @ X[t x K]  (loop_graph, grouped_mm: 2-D x 2-D with offsets on the
         reduction dim), reducing over the small token dimension.
Also: a dense torch.mm reference (8192^3 and 4096x4096x7168) so the run's clocks can be compared
with bench/data/h200-kernels.json, a correctness check of the grouped paths against the loop, and
the CUDA kernel names each path launched (torch.profiler), to tell cuBLAS from CUTLASS.

Timing: as gemm_attention_h200.py: median of 12 timed samples after 3 warm-ups, each sample = CUDA
events around back-to-back launches (about 2 ms) divided by their count; random normal inputs; no
L2 flush. One difference, for the small-t end, where a GEMM is bound by reading its weights: each
case keeps ceil(256 MiB / operand bytes) copies of its operands (at most 32; one when they exceed
256 MiB) and successive calls cycle through them, so weights and activations come from HBM as they
do in a training step, not from the 50-60 MB L2. Graph-timed paths capture R back-to-back calls
(cycling the copies; about 300 us of work) in one CUDA graph; the time is a replay's over R.
Rows give the forward GEMM's n, k; each expert's GEMM as (m, n, k) (output rows, output columns,
reduction) is (t, n, k) for fprop, (t, k, n) for dgrad and (n, k, t) for wgrad; all three passes
have FLOPs = 2 * sum(t_e) * n * k; efficiency = TFLOP/s / 989.4 (H100/H200 SXM dense BF16 peak, as
fit_gemm_profile.py).

    python3 tools/measure/grouped_gemm_h200.py --out bench/data/h200-grouped-gemm.json
"""
import argparse
import importlib
import json
import math
import random
import sys
import time

import torch

from gemm_attention_h200 import device_info, nvidia_smi, timed

BF16 = torch.bfloat16
DEV = "cuda"
PEAK = 989.4e12
MODELS = (  # name, hidden, moe_ffn (per-expert intermediate), routed experts, top-k
    ("DeepSeek-V3", 7168, 2048, 256, 8),
    ("Mixtral-8x7B", 4096, 14336, 8, 2),
    ("Qwen3-235B-A22B", 4096, 1536, 128, 8),
    ("GPT-OSS-120B", 2880, 2880, 128, 4),
    ("Qwen3-30B-A3B", 2048, 768, 128, 8),
)
E_LOCAL = (1, 2, 4, 8, 16, 32)
TOKENS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
MAX_ROWS = 65536
ROTATE_BYTES = 256 * 2**20
MAX_SETS = 32
GRAPH_TARGET_S = 300e-6
CVS = (0.5, 1.0)


def availability():
    """Which grouped-GEMM packages and torch entry points this machine has."""
    out = {}
    for mod in ("transformer_engine", "transformer_engine.pytorch", "grouped_gemm", "megatron.core"):
        try:
            m = importlib.import_module(mod)
            out[mod] = getattr(m, "__version__", "imported")
        except Exception as e:  # noqa: BLE001 - any failure means unavailable
            out[mod] = "unavailable: " + type(e).__name__ + ": " + str(e)[:120]
    out["torch._grouped_mm"] = hasattr(torch, "_grouped_mm")
    out["torch.nn.functional.grouped_mm"] = hasattr(torch.nn.functional, "grouped_mm")
    try:
        out["preferred_blas_library"] = str(torch.backends.cuda.preferred_blas_library())
    except Exception:  # noqa: BLE001
        pass
    return out


def lognormal_counts(n_experts, total, cv, seed):
    """Integer counts summing to total whose coefficient of variation (population std / mean) is
    cv: a fixed-seed normal draw, standardised, exponentiated with the sigma found by bisection."""
    rng = random.Random(seed)
    z = [rng.gauss(0.0, 1.0) for _ in range(n_experts)]
    mu = sum(z) / n_experts
    sd = math.sqrt(sum((x - mu) ** 2 for x in z) / n_experts) or 1.0
    z = [(x - mu) / sd for x in z]

    def counts_for(sigma):
        w = [math.exp(sigma * x) for x in z]
        s = sum(w)
        raw = [total * x / s for x in w]
        c = [int(math.floor(x)) for x in raw]
        rest = total - sum(c)
        for i in sorted(range(n_experts), key=lambda i: raw[i] - c[i], reverse=True)[:rest]:
            c[i] += 1
        return c

    def cv_of(c):
        m = sum(c) / len(c)
        return math.sqrt(sum((x - m) ** 2 for x in c) / len(c)) / m

    lo, hi = 0.0, 4.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if cv_of(counts_for(mid)) < cv:
            lo = mid
        else:
            hi = mid
    c = counts_for(hi)
    return c, cv_of(c)


def offsets(counts):
    acc, out = 0, []
    for c in counts:
        acc += c
        out.append(acc)
    return torch.tensor(out, dtype=torch.int32, device=DEV)


def graph_time(calls, est_s):
    """Seconds per call: R back-to-back calls (cycling through `calls`, one per operand copy)
    captured in one CUDA graph, replayed under timed(). est_s sizes R to about GRAPH_TARGET_S."""
    n = len(calls)
    per_copy = max(1, math.ceil(GRAPH_TARGET_S / max(est_s, 1e-6) / n))
    r = n * per_copy
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for c in calls:
            c()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(r):
            calls[i % n]()
    t = timed(lambda: g.replay()) / r
    del g
    return t


def eager_time(calls):
    it = [0]

    def fn():
        calls[it[0] % len(calls)]()
        it[0] += 1
    return timed(fn)


def est_seconds(flops, nbytes, kernels):
    return max(flops / 600e12, nbytes / 3.5e12) + 3e-6 * kernels


def case_rows(model, gemm, e, t, n, k):
    """All timings of one (model, GEMM, E_local, t) case: rows for the results list."""
    rows = []
    m_tot = e * t
    set_bytes = 2 * (m_tot * k + e * n * k + m_tot * n)  # x, w, dy
    nsets = max(1, min(MAX_SETS, math.ceil(ROTATE_BYTES / set_bytes)))
    xs = [torch.randn(m_tot, k, dtype=BF16, device=DEV) for _ in range(nsets)]
    ws = [torch.randn(e, n, k, dtype=BF16, device=DEV) for _ in range(nsets)]   # [E, out, in]
    gs = [torch.randn(m_tot, n, dtype=BF16, device=DEV) for _ in range(nsets)]  # dY
    y = torch.empty(e, t, n, dtype=BF16, device=DEV)
    dx = torch.empty(e, t, k, dtype=BF16, device=DEV)
    dw = torch.empty(e, n, k, dtype=BF16, device=DEV)
    base = {"model": model, "gemm": gemm, "e_local": e, "tokens_per_expert": t, "n": n, "k": k,
            "operand_copies": nsets}

    f_fwd = 2.0 * m_tot * n * k  # every pass of one case has these FLOPs

    def add(pas, path, split, measure, max_t=t, extra=None):
        """Time measure() (seconds per call) into a row; an exception becomes an error row."""
        row = {**base, "pass": pas, "path": path, "split": split, "max_tokens": max_t}
        if extra:
            row.update(extra)
        try:
            sec = measure()
            row.update({"time_us": round(sec * 1e6, 3), "tflops": round(f_fwd / sec / 1e12, 2),
                        "efficiency": round(f_fwd / sec / PEAK, 4)})
        except Exception as ex:  # noqa: BLE001 - keep the sweep going, record why
            row["error"] = type(ex).__name__ + ": " + str(ex)[:200]
            print("error", row, flush=True)
        rows.append(row)

    b_fwd = set_bytes  # read x and w, write y (the size of dy)
    x3 = [x.view(e, t, k) for x in xs]
    g3 = [g.view(e, t, n) for g in gs]

    def loop_fwd(i):
        return lambda: [torch.mm(x3[i][j], ws[i][j].t(), out=y[j]) for j in range(e)]
    loops = [loop_fwd(i) for i in range(nsets)]
    est_loop = est_seconds(f_fwd, b_fwd, e)
    add("fprop", "loop_eager", "balanced", lambda: eager_time(loops))
    add("fprop", "loop_graph", "balanced", lambda: graph_time(loops, est_loop))
    bmms = [(lambda i: lambda: torch.bmm(x3[i], ws[i].transpose(1, 2), out=y))(i) for i in range(nsets)]
    add("fprop", "bmm", "balanced", lambda: graph_time(bmms, est_seconds(f_fwd, b_fwd, 1)))

    have_gmm = hasattr(torch, "_grouped_mm")
    if have_gmm:
        splits = [("balanced", [t] * e, 0.0)]
        if e > 1:
            for j, cv in enumerate(CVS):
                c, got = lognormal_counts(e, m_tot, cv, seed=1000 * e + 10 * j + 7)
                splits.append(("cv%.1f" % cv, c, got))
        for name, counts, got in splits:
            offs = offsets(counts)
            gm = [(lambda i, o: lambda: torch._grouped_mm(xs[i], ws[i].transpose(-2, -1), offs=o))(i, offs)
                  for i in range(nsets)]
            extra = None if name == "balanced" else {"counts": counts, "cv_actual": round(got, 4)}
            add("fprop", "grouped_mm", name, lambda: graph_time(gm, est_seconds(f_fwd, b_fwd, 1)),
                max_t=max(counts), extra=extra)

    # Backward-shaped GEMMs (balanced).
    b_dg = 2 * (m_tot * n + e * n * k + m_tot * k)

    def loop_dgrad(i):
        return lambda: [torch.mm(g3[i][j], ws[i][j], out=dx[j]) for j in range(e)]

    def loop_wgrad(i):
        return lambda: [torch.mm(g3[i][j].t(), x3[i][j], out=dw[j]) for j in range(e)]
    add("dgrad", "loop_graph", "balanced",
        lambda: graph_time([loop_dgrad(i) for i in range(nsets)], est_seconds(f_fwd, b_dg, e)))
    add("wgrad", "loop_graph", "balanced",
        lambda: graph_time([loop_wgrad(i) for i in range(nsets)], est_seconds(f_fwd, b_dg, e)))
    if have_gmm:
        offs = offsets([t] * e)
        add("dgrad", "grouped_mm", "balanced", lambda: graph_time(
            [(lambda i: lambda: torch._grouped_mm(gs[i], ws[i], offs=offs))(i) for i in range(nsets)],
            est_seconds(f_fwd, b_dg, 1)))
        add("wgrad", "grouped_mm", "balanced", lambda: graph_time(
            [(lambda i: lambda: torch._grouped_mm(gs[i].t(), xs[i], offs=offs))(i) for i in range(nsets)],
            est_seconds(f_fwd, b_dg, 1)))
    del xs, ws, gs, y, dx, dw, x3, g3
    return rows


def check():
    """Relative error of bmm and _grouped_mm (fprop, imbalanced) and of grouped dgrad/wgrad
    against the per-expert loop, in float32 from the same BF16 inputs."""
    torch.manual_seed(0)
    e, k, n = 4, 1024, 768
    counts = [40, 200, 8, 264]
    x = torch.randn(sum(counts), k, dtype=BF16, device=DEV)
    w = torch.randn(e, n, k, dtype=BF16, device=DEV)
    g = torch.randn(sum(counts), n, dtype=BF16, device=DEV)
    out = {}
    splits = torch.split(torch.arange(sum(counts), device=DEV), counts)
    ref = torch.cat([x[s].float() @ w[i].float().t() for i, s in enumerate(splits)])
    rel = lambda a, b: float((a.float() - b).norm() / b.norm())  # noqa: E731
    xb = torch.randn(e, 128, k, dtype=BF16, device=DEV)
    out["bmm_fprop"] = rel(torch.bmm(xb, w.transpose(1, 2)), torch.einsum("etk,enk->etn", xb.float(), w.float()))
    if hasattr(torch, "_grouped_mm"):
        offs = offsets(counts)
        try:
            out["grouped_fprop"] = rel(torch._grouped_mm(x, w.transpose(-2, -1), offs=offs), ref)
            ref_dx = torch.cat([g[s].float() @ w[i].float() for i, s in enumerate(splits)])
            out["grouped_dgrad"] = rel(torch._grouped_mm(g, w, offs=offs), ref_dx)
            ref_dw = torch.stack([g[s].float().t() @ x[s].float() for s in splits])
            out["grouped_wgrad"] = rel(torch._grouped_mm(g.t(), x, offs=offs), ref_dw)
        except Exception as ex:  # noqa: BLE001
            out["grouped_error"] = type(ex).__name__ + ": " + str(ex)[:300]
    return out


def kernel_names():
    """CUDA kernels each path launches for DeepSeek-V3 FC1 at E_local 8, t 256 (torch.profiler)."""
    e, t, n, k = 8, 256, 4096, 7168
    x = torch.randn(e * t, k, dtype=BF16, device=DEV)
    w = torch.randn(e, n, k, dtype=BF16, device=DEV)
    g = torch.randn(e * t, n, dtype=BF16, device=DEV)
    offs = offsets([t] * e)
    fns = {"mm_fprop": lambda: torch.mm(x[:t], w[0].t()),
           "mm_dgrad": lambda: torch.mm(g[:t], w[0]),
           "mm_wgrad": lambda: torch.mm(g[:t].t(), x[:t]),
           "bmm_fprop": lambda: torch.bmm(x.view(e, t, k), w.transpose(1, 2))}
    if hasattr(torch, "_grouped_mm"):
        fns.update({"grouped_fprop": lambda: torch._grouped_mm(x, w.transpose(-2, -1), offs=offs),
                    "grouped_dgrad": lambda: torch._grouped_mm(g, w, offs=offs),
                    "grouped_wgrad": lambda: torch._grouped_mm(g.t(), x, offs=offs)})
    out = {}
    for name, fn in fns.items():
        try:
            fn()
            torch.cuda.synchronize()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
                fn()
                torch.cuda.synchronize()
            out[name] = sorted({ev.name[:160] for ev in p.events()
                                if getattr(ev, "device_type", None) == torch.autograd.DeviceType.CUDA})
        except Exception as ex:  # noqa: BLE001
            out[name] = "error: " + type(ex).__name__ + ": " + str(ex)[:200]
    return out


def dense_reference():
    rows = []
    for (m, n, k) in ((8192, 8192, 8192), (4096, 4096, 7168)):
        a = torch.randn(m, k, dtype=BF16, device=DEV)
        b = torch.randn(k, n, dtype=BF16, device=DEV)
        c = torch.empty(m, n, dtype=BF16, device=DEV)
        sec = timed(lambda: torch.matmul(a, b, out=c))
        f = 2.0 * m * n * k
        rows.append({"m": m, "n": n, "k": k, "time_us": round(sec * 1e6, 3), "tflops": round(f / sec / 1e12, 2),
                     "efficiency": round(f / sec / PEAK, 4)})
    return rows


def dump(res, path):
    """JSON with one results row per line (about 1 MB for the full sweep, not 5 MB as indent=1 gives)."""
    rows = res.pop("results")
    head = json.dumps(res, indent=1)
    body = ",\n".join("  " + json.dumps(r, separators=(",", ":")) for r in rows)
    text = head[:-2] + ',\n "results": [\n' + body + "\n ]\n}\n"
    res["results"] = rows
    json.loads(text)  # well-formed
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--deadline-s", type=float, default=420.0,
                    help="stop starting new cases after this many seconds (the file says so)")
    ap.add_argument("--models", default="", help="comma-separated subset of model names")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    t0 = time.time()
    dev = device_info()
    res = {**dev}
    if "H200" not in dev["device"]:
        res["DEVICE_WARNING"] = "measured on %s, NOT an H200" % dev["device"]
    res["description"] = __doc__.split("\n\n")[0].replace("\n", " ")
    res["method"] = __doc__.split("Timing: ")[1].split("\n\n    python3")[0].replace("\n", " ")
    res["peak_bf16_flops"] = PEAK
    res["models"] = [{"name": m, "hidden": h, "moe_ffn": f, "experts": ne, "topk": tk, "gated": True}
                     for (m, h, f, ne, tk) in MODELS]
    res["software"] = {"python": sys.version.split()[0], "available": availability()}
    res["nvidia_smi_start"] = nvidia_smi()
    res["check_rel_error_vs_fp32_loop"] = check()
    res["kernels"] = kernel_names()
    res["dense_reference_start"] = dense_reference()
    print(json.dumps({k: res[k] for k in ("device", "torch", "cuda", "software", "check_rel_error_vs_fp32_loop",
                                          "kernels", "dense_reference_start")}, indent=1), flush=True)
    rows = []
    truncated = False
    wanted = set(filter(None, args.models.split(",")))
    for (name, h, f, ne, _tk) in MODELS:
        if wanted and name not in wanted:
            continue
        for e in E_LOCAL:
            if e > ne:
                continue
            for t in TOKENS:
                if e * t > MAX_ROWS:
                    continue
                if time.time() - t0 > args.deadline_s:
                    truncated = True
                    break
                for gemm, n, k in (("fc1", 2 * f, h), ("fc2", h, f)):
                    rows += case_rows(name, gemm, e, t, n, k)
                torch.cuda.empty_cache()
            print("%s E_local=%d done at %.0f s" % (name, e, time.time() - t0), flush=True)
    res["truncated_by_deadline"] = truncated
    res["dense_reference_end"] = dense_reference()
    res["nvidia_smi"] = nvidia_smi()
    res["elapsed_s"] = time.time() - t0
    res["results"] = rows
    dump(res, args.out)
    # Short table last: DeepSeek-V3 FC1 fprop efficiency at E_local 8.
    print("DeepSeek-V3 fc1 fprop E_local=8: t, loop_eager, loop_graph, bmm, grouped, grouped_cv0.5, grouped_cv1.0")
    for t in TOKENS:
        sel = {(r["path"], r["split"]): r.get("efficiency") for r in rows if r["model"] == "DeepSeek-V3"
               and r["gemm"] == "fc1" and r["pass"] == "fprop" and r["e_local"] == 8 and r["tokens_per_expert"] == t}
        if sel:
            print(t, *[sel.get(p) for p in (("loop_eager", "balanced"), ("loop_graph", "balanced"), ("bmm", "balanced"),
                                            ("grouped_mm", "balanced"), ("grouped_mm", "cv0.5"), ("grouped_mm", "cv1.0"))])
    print("wrote", args.out, "rows", len(rows), "elapsed", round(res["elapsed_s"], 1), "truncated", truncated)


if __name__ == "__main__":
    main()
