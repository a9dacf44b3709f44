"""Measure NCCL collectives on the GPUs of one host with PyTorch (issue 6), for comparison with
`megasim collective configs/... --set cluster.base=dgx-h200-node ...`.

One process per GPU (torch.multiprocessing), NCCL backend, NVLink multicast OFF
(NCCL_NVLS_ENABLE=0 and the other variables the device notes require). For each collective,
GPU count and size: warm-up, then the median of repeated timed runs (CUDA events around one
call), algbw = size / time and busbw by nccl-tests' definitions (PERFORMANCE.md):
all-reduce x 2(n-1)/n, all-gather / reduce-scatter x (n-1)/n, send/recv x 1. Sizes follow
nccl-tests: all-reduce = buffer, all-gather = total output, reduce-scatter = total input.

    python3 tools/measure/nccl_collectives.py --gpus 2,4,8 --min 1KiB --max 8GiB --out bench/data/h200-nccl.json
"""
import argparse
import json
import os
import statistics

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def parse_size(text):
    for unit in sorted(UNITS, key=len, reverse=True):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * UNITS[unit])
    return int(text)


def busbw_factor(op, n):
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter"):
        return (n - 1) / n
    return 1.0


def run_one(op, size, n, rank, warmup, iters):
    elems = max(1, size // 4)  # float32 elements, as nccl-tests' default
    if op == "all_reduce":
        buf = torch.ones(elems, device="cuda")
        call = lambda: dist.all_reduce(buf)
    elif op == "all_gather":
        per = max(1, elems // n)
        inp = torch.ones(per, device="cuda")
        out = torch.empty(per * n, device="cuda")
        call = lambda: dist.all_gather_into_tensor(out, inp)
    elif op == "reduce_scatter":
        per = max(1, elems // n)
        inp = torch.ones(per * n, device="cuda")
        out = torch.empty(per, device="cuda")
        call = lambda: dist.reduce_scatter_tensor(out, inp)
    else:  # send_recv between ranks 0 and 1; the other ranks idle
        buf = torch.ones(elems, device="cuda")
        def call():
            if rank == 0:
                dist.send(buf, 1)
            elif rank == 1:
                dist.recv(buf, 0)
    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        dist.barrier()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    t = torch.tensor([statistics.median(times)], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)  # the slowest rank's median
    return t.item()


def worker(rank, n, args, rows_path):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(29500 + n)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=n)
    rows = []
    size = parse_size(args.min)
    while size <= parse_size(args.max):
        for op in args.ops.split(","):
            if op == "send_recv" and n < 2:
                continue
            iters = args.iters if size < (256 << 20) else max(5, args.iters // 4)
            t = run_one(op, size, n, rank, args.warmup, iters)
            algbw = size / t / 1e9
            rows.append({"op": op, "gpus": n, "size_bytes": size, "time_s": t, "algbw_GBps": algbw,
                         "busbw_GBps": algbw * busbw_factor(op, n)})
        size *= 2
    if rank == 0:  # a file, not a queue: a large queue item can block the child's exit
        with open(rows_path, "w") as f:
            json.dump(rows, f)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--gpus", default="2,4,8")
    p.add_argument("--ops", default="all_reduce,all_gather,reduce_scatter,send_recv")
    p.add_argument("--min", default="1KiB")
    p.add_argument("--max", default="8GiB")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    available = torch.cuda.device_count()
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "nccl": ".".join(map(str, torch.cuda.nccl.version())), "env_nvls": os.environ["NCCL_NVLS_ENABLE"],
              "method": "median of timed runs after warm-up, CUDA events, max over ranks; float32 buffers",
              "rows": []}
    for n in (int(g) for g in args.gpus.split(",")):
        if n > available:
            print(f"skip {n} GPUs: only {available} visible")
            continue
        rows_path = f"/tmp/nccl-rows-{n}.json"
        mp.spawn(worker, args=(n, args, rows_path), nprocs=n, join=True)
        with open(rows_path) as f:
            result["rows"].extend(json.load(f))
    text = json.dumps(result, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
