#!/usr/bin/env python3
"""Measure the kernel rates that ground megasim's Hopper hardware profile (configs/hw/hopper.json).

Runs on one GPU with PyTorch. Every figure is the median of 12 timed samples after warm-up; a sample
is a pair of CUDA events around back-to-back launches (see timed()); memory-bound kernels and
attention get an L2 flush before each call whose own time is subtracted. Output: one JSON file (bench/data/h200-kernels.json
in the repo), used by the fit documented in configs/hw/hopper.json.

  python3 tools/measure/gemm_attention_h200.py --out bench/data/h200-kernels.json
"""
import argparse
import json
import os
import statistics
import subprocess
import time

import torch
import torch.nn.attention  # noqa: F401 - sdpa_kernel, SDPBackend
import torch.nn.functional as F

DT = torch.bfloat16
REPS = 12
WARM = 3


def timed(fn, reps=REPS, warm=WARM, flush=None, batch_s=2e-3):
    """Median seconds per call of fn. Each timed sample launches fn `inner` times back-to-back
    between one pair of CUDA events, so the host's launch latency (about 10-30 us per PyTorch
    call) is hidden as it is in a training step, where the stream is kept full. `inner` is chosen
    so a sample lasts about batch_s. With flush, the sample is flush+fn and the separately timed
    flush is subtracted, so fn's inputs come from HBM."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()

    def sample(body, inner):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(inner):
            body()
        b.record()
        b.synchronize()
        return a.elapsed_time(b) * 1e-3 / inner

    t1 = sample(fn, 1)
    inner = max(1, min(200, int(batch_s / max(t1, 1e-6))))
    if flush is None:
        return statistics.median(sample(fn, inner) for _ in range(reps))

    def both():
        flush()
        fn()
    t_both = statistics.median(sample(both, inner) for _ in range(reps))
    t_flush = statistics.median(sample(flush, inner) for _ in range(reps))
    return max(t_both - t_flush, 0.0)


def time_causal_sdpa(q, k, v, go, backend, flush=None):
    """Seconds of one causal torch SDPA forward and of forward + backward (the gradient taken
    with autograd.grad, no leaf accumulation) with `backend` forced, each as timed()."""
    import torch.nn.attention
    import torch.nn.functional as F
    with torch.nn.attention.sdpa_kernel(backend):
        t_f = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), flush=flush)

        def fb():
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            torch.autograd.grad(o, (q, k, v), go)
        return t_f, timed(fb, flush=flush)


def make_flush():
    buf = torch.empty(512 * 2**20, dtype=torch.uint8, device="cuda")
    return lambda: buf.zero_()


def gemm_rows(shapes, tag):
    rows = []
    for (m, n, k) in shapes:
        a = torch.randn(m, k, dtype=DT, device="cuda")
        b = torch.randn(k, n, dtype=DT, device="cuda")
        c = torch.empty(m, n, dtype=DT, device="cuda")
        flops = 2.0 * m * n * k
        reps = REPS if flops > 1e11 else 30
        t = timed(lambda: torch.matmul(a, b, out=c), reps=reps)
        rows.append({"set": tag, "m": m, "n": n, "k": k, "time_s": t, "tflops": flops / t / 1e12})
        del a, b, c
    return rows


def gemm_shapes():
    sq = [(s, s, s) for s in (128, 256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384)]
    # Transformer GEMMs (forward: m = b*s tokens, n = output features, k = input features).
    tf = []
    for m in (512, 1024, 2048, 4096, 8192, 16384):
        for (n, k) in ((4608, 12288), (12288, 1536), (6144, 12288), (12288, 6144),   # 175B TP8
                       (1536, 12288), (12288, 12288 // 8 * 4),                       # 175B TP8 alt
                       (36864, 12288), (12288, 49152), (49152, 12288),               # 175B TP1
                       (6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336),     # Llama-8B TP1
                       (1280, 8192), (8192, 1024), (7168, 8192), (8192, 3584)):      # Llama-70B TP8
            tf.append((m, n, k))
    # Backward wgrad shapes for 175B TP8 at b*s = 2048: reduction over the token dim.
    wg = [(4608, 12288, 2048), (12288, 1536, 2048), (6144, 12288, 2048), (12288, 6144, 2048)]
    # Grid over n, k for the model form's size dependence.
    grid = []
    for m in (512, 2048, 8192, 16384):
        for n in (1024, 4096, 12288, 49152):
            for k in (1024, 4096, 12288, 49152):
                grid.append((m, n, k))
    # Awkward sizes for wave/tile quantization: just past a tile multiple and just past a wave.
    awk = []
    for m in (2048, 2049, 2112, 2176, 4096, 4097, 4224):
        awk.append((m, 8192, 8192))
    for n in (8192, 8193, 8256, 8320, 8448, 9216, 9344, 10240):
        awk.append((2048, n, 8192))
    # Tile/wave scan: N from 128 to 2048 with m = 2048, k = 8192 (number of output tiles grows).
    for n in range(128, 4097, 128):
        awk.append((2048, n, 8192))
    seen, out = set(), {}
    for tag, lst in (("square", sq), ("transformer", tf), ("wgrad", wg), ("grid", grid), ("awkward", awk)):
        out[tag] = [s for s in lst if not (s in seen or seen.add(s))]
    return out


def attention_rows():
    rows = []
    flush = make_flush()
    for backend_name, backend in (("flash", torch.nn.attention.SDPBackend.FLASH_ATTENTION),
                                  ("math", torch.nn.attention.SDPBackend.MATH)):
        for d in (128, 96):
            for s, bsz in ((1024, 16), (2048, 8), (4096, 4), (8192, 2), (16384, 1)):
                if backend_name == "math" and s > 4096:
                    continue
                h = 16
                q = torch.randn(bsz, h, s, d, dtype=DT, device="cuda", requires_grad=True)
                k = torch.randn_like(q, requires_grad=True)
                v = torch.randn_like(q, requires_grad=True)
                go = torch.randn_like(q)
                with torch.nn.attention.sdpa_kernel(backend):
                    fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    t_f = timed(fwd, flush=flush)
                    def fb():
                        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                        torch.autograd.grad(o, (q, k, v), go)
                    t_fb = timed(fb, flush=flush)
                # Causal FLOPs as the FlashAttention-2 paper counts them: 4*b*h*s^2*d/2 forward,
                # backward 2.5x forward.
                f_fwd = 4.0 * bsz * h * s * s * d / 2
                rows.append({"backend": backend_name, "batch": bsz, "heads": h, "seq": s, "head_dim": d,
                             "causal": True, "fwd_time_s": t_f, "fwd_bwd_time_s": t_fb,
                             "fwd_tflops_causal": f_fwd / t_f / 1e12,
                             "fwd_bwd_tflops_causal": 3.5 * f_fwd / t_fb / 1e12,
                             "bwd_tflops_causal": 2.5 * f_fwd / (t_fb - t_f) / 1e12})
                del q, k, v, go
    return rows


def memory_rows():
    rows = []
    flush = make_flush()
    for nbytes in (2**20, 8 * 2**20, 64 * 2**20, 512 * 2**20, 4 * 2**30):
        src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_()
        dst = torch.empty_like(src)
        t = timed(lambda: dst.copy_(src), flush=flush)
        rows.append({"op": "copy", "bytes_moved": 2 * nbytes, "time_s": t, "GBps": 2 * nbytes / t / 1e9})
        del src, dst
    for (m, n) in ((2048, 12288), (8192, 12288), (2048, 4096), (512, 12288)):
        x = torch.randn(m, n, dtype=DT, device="cuda")
        w = torch.ones(n, dtype=DT, device="cuda")
        bb = torch.zeros(n, dtype=DT, device="cuda")
        nb = x.numel() * 2
        for name, fn in (("layernorm", lambda: F.layer_norm(x, (n,), w, bb)),
                         ("rmsnorm", lambda: F.rms_norm(x, (n,), w)),
                         ("gelu", lambda: F.gelu(x, approximate="tanh")),
                         ("add", lambda: x + x)):
            t = timed(fn, flush=flush)
            moved = 2 * nb if name != "add" else 2 * nb  # read x (once; cached for add) + write y
            rows.append({"op": name, "m": m, "n": n, "bytes_moved": moved, "time_s": t,
                         "GBps": moved / t / 1e9})
        del x, w, bb
    return rows


def launch_rows():
    # Device-side cost of one tiny kernel: 1000 kernels captured in a CUDA graph and replayed
    # (no host in the loop), and the same kernels launched eagerly from Python (host-bound).
    x = torch.zeros(1, device="cuda")
    n = 1000
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(10):
            x.add_(1)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            x.add_(1)
    graph = timed(lambda: g.replay(), batch_s=5e-3) / n

    def eager():
        for _ in range(n):
            x.add_(1)
    eag = timed(eager, batch_s=5e-3) / n
    return {"tiny_kernel_in_cuda_graph_s": graph, "tiny_kernel_eager_back_to_back_s": eag}


def count_cuda_kernels(fn):
    """CUDA kernels (and memcpys) that fn() launches, counted with torch.profiler."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)


def device_info():
    """The GPU and software a measurement file was taken with (its first keys)."""
    props = torch.cuda.get_device_properties(0)
    return {"device": props.name, "sm_count": props.multi_processor_count,
            "total_memory_bytes": props.total_memory, "torch": torch.__version__,
            "cuda": torch.version.cuda, "dtype": "bf16"}


def nvidia_smi():
    """Clocks and power at the end of a run (informational; the error text if the query fails)."""
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit",
             "--format=csv"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError) as e:
        return str(e)


def emit_to_out(result, filename):
    """End of the host/device probes run through the device tool: print the JSON and write it
    to $OUT/filename when $OUT is set."""
    text = json.dumps(result, indent=1)
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, filename), "w") as f:
            f.write(text + "\n")
    print(text)


def start_measurement():
    """Common start of the device measurement scripts: parse --out, keep GEMMs off TF32.
    Returns the output path and the start time."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    return args.out, time.time()


def write_measurement(result, path, t0):
    """Common end: append the clocks/power snapshot and the elapsed time, write the JSON."""
    result["nvidia_smi"] = nvidia_smi()
    result["elapsed_s"] = time.time() - t0
    with open(path, "w") as f:
        json.dump(result, f, indent=1)


def main():
    out, t0 = start_measurement()
    res = {**device_info(),
           "method": "median of 12 timed samples after 3 warm-ups; each sample = CUDA events around "
                     "back-to-back launches (about 2 ms) divided by their count; random normal inputs; "
                     "memory-bound and attention ops: a 512 MiB L2 flush before each call, its own "
                     "separately timed cost subtracted"}
    res["launch"] = launch_rows()
    res["memory"] = memory_rows()
    print("memory done", time.time() - t0, flush=True)
    res["attention"] = attention_rows()
    print("attention done", time.time() - t0, flush=True)
    res["gemm"] = []
    for tag, shapes in gemm_shapes().items():
        res["gemm"] += gemm_rows(shapes, tag)
        print("gemm", tag, "done", time.time() - t0, flush=True)
    write_measurement(res, out, t0)
    print("wrote", out, res["elapsed_s"])


if __name__ == "__main__":
    main()
