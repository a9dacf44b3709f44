#!/usr/bin/env python3
"""Measure, on one GPU, what Megatron-Core's word-embedding backward costs.

VocabParallelEmbedding.forward (megatron/core/tensor_parallel/layers.py) looks the tokens up with
F.embedding, whose backward (embedding_dense_backward) materialises a dense gradient of the whole
vocabulary shard (zero-filled, then the tokens' rows summed in after a sort of their ids), and
Megatron's DDP backward hook then adds that dense 16-bit gradient into the FP32 main-grad buffer
(distributed_data_parallel.py: param.main_grad.add_(param.grad.data)). Timed here, for a vocabulary shard of V rows of width h and T tokens: the
lookup alone (forward_time_s), the lookup with its backward (backward_time_s) and with the
main-grad add as well (backward_and_main_grad_add_time_s; subtract the lookup for the backward's
cost), with the kernel counts (the lookup's included in kernels_backward_and_add); reported beside the bytes a dense model moves:
  zero-fill 2 B, add 2 + 4 + 4 B per V x h element, and the rows read and written per token.

    python3 tools/measure/embedding_dense_grad.py --out bench/data/h100-embedding-dense-grad.json
"""
import torch
import torch.nn.functional as F

from gemm_attention_h200 import (count_cuda_kernels, device_info, make_flush, start_measurement, timed,
                                 write_measurement)

BF16 = torch.bfloat16


def rows():
    out = []
    flush = make_flush()
    # (tokens, vocab shard, hidden): Llama 3 8B TP1, Llama 3.1 70B TP8, GPT-OSS TP1, GPT-3 TP8.
    for (t, v, h) in ((4096, 128256, 4096), (4096, 16032, 8192), (4096, 201088, 2880), (2048, 6400, 12288),
                      (16384, 128256, 4096)):
        weight = torch.randn(v, h, dtype=BF16, device="cuda", requires_grad=True)
        main_grad = torch.zeros(v, h, dtype=torch.float32, device="cuda")
        ids = torch.randint(0, v, (t,), device="cuda")
        dy = torch.randn(t, h, dtype=BF16, device="cuda")

        def backward_only():
            weight.grad = None
            F.embedding(ids, weight).backward(dy)

        def backward_and_add():
            backward_only()
            main_grad.add_(weight.grad)

        def forward_only():
            with torch.no_grad():
                return F.embedding(ids, weight)

        t_fwd = timed(forward_only, flush=flush)
        t_bwd = timed(backward_only, flush=flush)
        t_all = timed(backward_and_add, flush=flush)
        copy_s = timed(lambda: weight.detach().clone(), flush=flush)
        copy_Bps = 4.0 * v * h / copy_s
        model_bytes = v * h * (2.0 + 10.0) + t * h * 2.0 * 2.0
        out.append({"tokens": t, "vocab_shard": v, "hidden": h,
                    "forward_time_s": t_fwd, "backward_time_s": t_bwd, "backward_and_main_grad_add_time_s": t_all,
                    "kernels_forward": count_cuda_kernels(forward_only),
                    "kernels_backward_and_add": count_cuda_kernels(backward_and_add),
                    "copy_GBps": copy_Bps / 1e9,
                    "dense_model_bytes": model_bytes,
                    "measured_over_dense_model_at_copy_rate": t_all / (model_bytes / copy_Bps)})
        del weight, main_grad, ids, dy
        torch.cuda.empty_cache()
    return out


def main():
    out, t0 = start_measurement()
    res = {**device_info(), "torch": torch.__version__,
           "method": "median of 12 timed samples after 3 warm-ups; each sample = CUDA events around back-to-back "
                     "calls (about 2 ms) divided by their count, a 512 MiB L2 flush before each call subtracted; "
                     "kernels counted with torch.profiler (autograd's own launches included)"}
    res["rows"] = rows()
    write_measurement(res, out, t0)
    print("wrote", out, res["elapsed_s"])


if __name__ == "__main__":
    main()
