"""Measure the GPU memory a training process holds outside PyTorch's caching allocator: the
CUDA context, the loaded kernel images (cuBLAS/cuBLASLt, attention, elementwise) and any
library scratch not allocated through torch.

megasim's memory model counts it as `buffers.cuda_context_bytes` (configs/hw/*.json). This
script reads the process's device memory from nvidia-smi (`--query-compute-apps`, what the
driver charges to the process) and subtracts `torch.cuda.memory_reserved()` (everything the
caching allocator holds, which includes PyTorch's cuBLAS workspaces), at four points:

  1. after the context is created (one 4-byte tensor);
  2. after the forward and backward of one 175B TP-8 layer shard (bf16 GEMMs, SDPA flash
     attention, LayerNorm, GeLU, dropout) and a fused Adam step: the kernels a Megatron rank
     loads in its first step;
  3. after a single-rank NCCL communicator ran an all-reduce (NCCL's own cudaMalloc'd state;
     with peers it adds the per-peer buffers megasim counts separately as
     nccl_bytes_per_communicator), and after a second one (what NCCL holds once per process
     against once per communicator);
  4. the same as 2 in a fresh process with CUDA_MODULE_LOADING=EAGER (every kernel image of
     every loaded library resident: the upper bound; PyTorch's default is LAZY).

Writes JSON to $OUT/h200-cuda-context.json (or stdout).
"""
import json
import os
import subprocess
import sys

import torch

from gemm_attention_h200 import device_info, emit_to_out
from tp8_shard_layer import DEV, DT, H, S, ShardLayer

MIB = 1 << 20


def smi(query):
    return subprocess.run(["nvidia-smi", query, "--format=csv,noheader,nounits"], check=True,
                          capture_output=True, text=True).stdout.strip()


# The device's used memory before this process touches CUDA: the fallback when a container's
# PID namespace hides this process from --query-compute-apps.
DEVICE_USED_AT_START = int(smi("--query-gpu=memory.used").splitlines()[0]) * MIB


def process_used_bytes():
    """Device memory the driver charges to this process (nvidia-smi, MiB resolution)."""
    for line in smi("--query-compute-apps=pid,used_memory").splitlines():
        pid, used = (x.strip() for x in line.split(","))
        if pid.isdigit() and int(pid) == os.getpid():
            return int(used) * MIB, "per-process used_memory"
    used = int(smi("--query-gpu=memory.used").splitlines()[0]) * MIB
    return used - DEVICE_USED_AT_START, "device memory.used minus its value before CUDA init"


def outside_allocator():
    torch.cuda.synchronize()
    used, how = process_used_bytes()
    reserved = torch.cuda.memory_reserved()
    return {"process_bytes": used, "allocator_reserved_bytes": reserved,
            "outside_allocator_bytes": used - reserved, "process_bytes_from": how}


def first_step():
    torch.manual_seed(0)
    layer = ShardLayer()
    opt = torch.optim.Adam(layer.parameters(), lr=1e-4, fused=True)
    x = torch.randn(S, H, device=DEV, dtype=DT, requires_grad=True)
    layer(x).float().pow(2).mean().backward()
    opt.step()


def main():
    if "--eager-child" in sys.argv:
        torch.zeros(1, device=DEV)
        first_step()
        print(json.dumps(outside_allocator()))
        return

    torch.zeros(1, device=DEV)
    points = {"context only": outside_allocator()}
    first_step()
    points["after one layer's forward, backward and fused Adam step"] = outside_allocator()

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    import torch.distributed as dist
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device(DEV, 0))
    t = torch.ones(1 << 20, device=DEV)
    dist.all_reduce(t)
    points["+ single-rank NCCL communicator after one all-reduce"] = outside_allocator()
    # A second communicator separates what NCCL loads once per process (its kernel images)
    # from what it allocates per communicator.
    second = dist.new_group(ranks=[0])
    dist.all_reduce(t, group=second)
    points["+ a second single-rank communicator after one all-reduce"] = outside_allocator()
    dist.destroy_process_group()

    env = dict(os.environ, CUDA_MODULE_LOADING="EAGER")
    child = subprocess.run([sys.executable, __file__, "--eager-child"], check=True, capture_output=True,
                           text=True, env=env, cwd=os.path.dirname(os.path.abspath(__file__)))
    points["after the first step, CUDA_MODULE_LOADING=EAGER (fresh process)"] = json.loads(
        child.stdout.strip().splitlines()[-1])

    result = {
        **device_info(),
        "cuda_module_loading_default": os.environ.get("CUDA_MODULE_LOADING", "unset (LAZY since CUDA 11.7)"),
        "method": "nvidia-smi process memory (MiB) minus torch.cuda.memory_reserved()",
        "points": points,
    }
    emit_to_out(result, "h200-cuda-context.json")


if __name__ == "__main__":
    main()
