#!/usr/bin/env python3
"""Cost of Megatron's gradient-accumulation fusion on FP8 and BF16 weight-gradient GEMMs: the
GEMM accumulating into an FP32 main-grad buffer (C = D in FP32, beta = 1) against the same GEMM
writing a 16-bit result (beta = 0), called through cuBLASLt directly (ctypes), as Transformer
Engine calls it for its FP8 wgrad (E4M3 input x E5M2 output gradient, "TN" layout, split
accumulator, accumulate into main_grad). PyTorch exposes no FP8 GEMM with an FP32 C input, so
torch.addmm cannot time this case.

Purpose: the hw profile's gemm.main_grad_exposed_fraction and gemm_fp8.main_grad_exposed_fraction
(fit by fit_main_grad.py). For the suites' shapes it also times BF16 in the "NT" layout of
Transformer Engine's BF16 wgrad, and the earlier method (llama_layer_h200.py: an out-of-place
torch.addmm into a new FP32 tensor), which costs 2.5x the in-place epilogue.

Timing: as gemm_attention_h200.py (CUDA events around back-to-back calls, median of 12 samples
after 3 warm-ups); every variant of a shape uses the algorithm cuBLASLt's heuristic ranks first
for it, with a 32 MiB workspace.
    python3 tools/measure/fp8_main_grad_h200.py --out bench/data/h200-fp8-main-grad.json
"""
import ctypes
import glob
import os
import re
import sys

import torch

from gemm_attention_h200 import device_info, start_measurement, timed, write_measurement

DEV = "cuda"
WORKSPACE = 32 << 20

# Weight-gradient GEMMs dW[out, in] = dY^T X of the DGX Cloud suites' layers (one TP rank's
# shard; k = tokens of one micro-batch on one CP rank), and a grid around them.
SUITE = {
    "llama3.1-8b_tp1": (4096, 14336, 8 * 128, 4096),
    "llama3.1-70b_tp4": (8192, 28672 // 4, 2 * 128, 4096),
    "llama3.1-405b_tp8_g16": (16384, 53248 // 8, 2 * 128, 4096),
    "gpt3-175b_tp4": (12288, 4 * 12288 // 4, None, 2048),
    "nemotron4-340b_tp8": (18432, 73728 // 8, 1 * 128, 4096),
    "nemotron4-15b_tp4_mb4": (6144, 24576 // 4, 2 * 128, 16384),
}


def suite_shapes():
    """(name, m = out features, n = in features, k = tokens) of each layer's four linears."""
    heads = {"llama3.1-8b_tp1": 32, "llama3.1-70b_tp4": 16, "llama3.1-405b_tp8_g16": 16,
             "gpt3-175b_tp4": 24, "nemotron4-340b_tp8": 12, "nemotron4-15b_tp4_mb4": 12}
    gated = {"nemotron4-340b_tp8": False, "nemotron4-15b_tp4_mb4": False, "gpt3-175b_tp4": False}
    rows = []
    for name, (h, ffn, kv, tokens) in SUITE.items():
        q = heads[name] * 128
        kv = 2 * q if kv is None else 2 * kv  # GPT-3: multi-head attention, K and V like Q
        fc1 = (2 if gated.get(name, True) else 1) * ffn
        for lin, (m, n) in {"qkv": (q + kv, h), "proj": (h, q), "fc1": (fc1, h), "fc2": (h, ffn)}.items():
            rows.append((f"{name}.{lin}", m, n, tokens))
    for m in (2048, 4096, 8192, 16384):
        for n in (2048, 4096, 8192, 16384):
            for k in (2048, 8192):
                rows.append((f"grid.{m}x{n}x{k}", m, n, k))
    return rows


def find_lib():
    """The libcublasLt PyTorch itself loaded (read from /proc/self/maps after a GEMM), else the
    one the pip nvidia wheels ship, else the system's."""
    torch.mm(torch.ones(16, 16, device=DEV), torch.ones(16, 16, device=DEV))
    torch.cuda.synchronize()
    with open("/proc/self/maps") as f:
        for line in f:
            if "libcublasLt" in line:
                return line.split()[-1]
    for root in [p for p in sys.path if "site-packages" in p]:
        hits = sorted(glob.glob(os.path.join(root, "nvidia", "**", "libcublasLt.so*"), recursive=True))
        if hits:
            return hits[-1]
    return "libcublasLt.so"


def header_enums(lib_path):
    """Enum values from cublasLt.h next to the library, where the wheel ships it."""
    base = os.path.dirname(os.path.dirname(lib_path))
    found = glob.glob(os.path.join(base, "include", "cublasLt.h")) + glob.glob("/usr/local/cuda*/include/cublasLt.h")
    inc = found[0] if found else ""
    vals = {}
    if os.path.exists(inc):
        for m in re.finditer(r"\b(CUBLASLT_[A-Z0-9_]+)\s*=\s*(\d+)", open(inc).read()):
            vals.setdefault(m.group(1), int(m.group(2)))
    return vals, inc if os.path.exists(inc) else None


# Values of cublasLt.h (CUDA 12/13) used when the header is not shipped.
DEFAULTS = {"CUBLASLT_MATMUL_DESC_TRANSA": 3, "CUBLASLT_MATMUL_DESC_TRANSB": 4,
            "CUBLASLT_MATMUL_DESC_A_SCALE_POINTER": 17, "CUBLASLT_MATMUL_DESC_B_SCALE_POINTER": 18,
            "CUBLASLT_MATMUL_DESC_FAST_ACCUM": 25, "CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES": 1}
CUDA_R_32F, CUDA_R_16BF, CUDA_R_8F_E4M3, CUDA_R_8F_E5M2 = 0, 14, 28, 29
CUBLAS_COMPUTE_32F, CUBLAS_OP_N, CUBLAS_OP_T = 68, 0, 1


class Heuristic(ctypes.Structure):
    _fields_ = [("algo", ctypes.c_uint64 * 8), ("workspaceSize", ctypes.c_size_t),
                ("state", ctypes.c_int), ("wavesCount", ctypes.c_float), ("reserved", ctypes.c_int * 4)]


class Lt:
    def __init__(self):
        self.path = find_lib()
        self.lib = ctypes.CDLL(self.path)
        self.enums, self.header = header_enums(self.path)
        self.handle = ctypes.c_void_p()
        self.check(self.lib.cublasLtCreate(ctypes.byref(self.handle)), "cublasLtCreate")
        self.workspace = torch.empty(WORKSPACE, dtype=torch.uint8, device=DEV)
        self.one = torch.ones(1, dtype=torch.float32, device=DEV)  # FP8 scale factors

    def enum(self, name):
        return self.enums.get(name, DEFAULTS[name])

    @staticmethod
    def check(status, what):
        if status != 0:
            raise RuntimeError(f"{what} returned cuBLAS status {status}")

    def set_attr(self, desc, name, value, ctype):
        v = ctype(value)
        self.check(self.lib.cublasLtMatmulDescSetAttribute(desc, self.enum(name), ctypes.byref(v),
                                                           ctypes.sizeof(v)), name)

    def layout(self, dtype, rows, cols, ld):
        lay = ctypes.c_void_p()
        self.check(self.lib.cublasLtMatrixLayoutCreate(ctypes.byref(lay), dtype, ctypes.c_uint64(rows),
                                                       ctypes.c_uint64(cols), ctypes.c_int64(ld)), "layout")
        return lay

    def gemm(self, m, n, k, fp8, accumulate_fp32, nt=False, b_e5m2=True):
        """A callable D[m, n] (column-major) = A^T B (+ D): A stored k x m, B k x n (K-major, the
        layout FP8 requires); FP8: E4M3 x E5M2 with split accumulation; D FP32 with beta = 1 when
        accumulate_fp32, else BF16 with beta = 0. nt (BF16 only): D = A B^T with A stored m x k
        and B n x k, the layout Transformer Engine's BF16 wgrad GEMM uses (general_gemm "NT").
        b_e5m2 = False: B in E4M3 too, as in Transformer Engine's forward GEMMs."""
        if fp8:
            a = torch.randn(m, k, device=DEV).to(torch.float8_e4m3fn)
            b = torch.randn(n, k, device=DEV).to(torch.float8_e5m2 if b_e5m2 else torch.float8_e4m3fn)
            ta, tb = CUDA_R_8F_E4M3, CUDA_R_8F_E5M2 if b_e5m2 else CUDA_R_8F_E4M3
        else:
            a = torch.randn(k, m, device=DEV, dtype=torch.bfloat16) if nt else torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
            b = torch.randn(k, n, device=DEV, dtype=torch.bfloat16) if nt else torch.randn(n, k, device=DEV, dtype=torch.bfloat16)
            ta = tb = CUDA_R_16BF
        d = torch.zeros(n, m, device=DEV, dtype=torch.float32 if accumulate_fp32 else torch.bfloat16)
        td = CUDA_R_32F if accumulate_fp32 else CUDA_R_16BF
        desc = ctypes.c_void_p()
        self.check(self.lib.cublasLtMatmulDescCreate(ctypes.byref(desc), CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc")
        self.set_attr(desc, "CUBLASLT_MATMUL_DESC_TRANSA", CUBLAS_OP_N if nt else CUBLAS_OP_T, ctypes.c_int32)
        self.set_attr(desc, "CUBLASLT_MATMUL_DESC_TRANSB", CUBLAS_OP_T if nt else CUBLAS_OP_N, ctypes.c_int32)
        if fp8:
            self.set_attr(desc, "CUBLASLT_MATMUL_DESC_A_SCALE_POINTER", self.one.data_ptr(), ctypes.c_void_p)
            self.set_attr(desc, "CUBLASLT_MATMUL_DESC_B_SCALE_POINTER", self.one.data_ptr(), ctypes.c_void_p)
            self.set_attr(desc, "CUBLASLT_MATMUL_DESC_FAST_ACCUM", 0, ctypes.c_int8)
        if nt:
            la, lb, ld = self.layout(ta, m, k, m), self.layout(tb, n, k, n), self.layout(td, m, n, m)
        else:
            la, lb, ld = self.layout(ta, k, m, k), self.layout(tb, k, n, k), self.layout(td, m, n, m)
        pref = ctypes.c_void_p()
        self.check(self.lib.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)), "pref")
        ws = ctypes.c_uint64(WORKSPACE)
        self.check(self.lib.cublasLtMatmulPreferenceSetAttribute(
            pref, self.enum("CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES"), ctypes.byref(ws), ctypes.sizeof(ws)), "pref ws")
        heur, count = Heuristic(), ctypes.c_int(0)
        self.check(self.lib.cublasLtMatmulAlgoGetHeuristic(self.handle, desc, la, lb, ld, ld, pref, 1,
                                                           ctypes.byref(heur), ctypes.byref(count)), "heuristic")
        if count.value < 1:
            raise RuntimeError("no cuBLASLt algorithm")
        alpha = ctypes.c_float(1.0)
        beta = ctypes.c_float(1.0 if accumulate_fp32 else 0.0)
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        args = (self.handle, desc, ctypes.byref(alpha), ctypes.c_void_p(a.data_ptr()), la,
                ctypes.c_void_p(b.data_ptr()), lb, ctypes.byref(beta), ctypes.c_void_p(d.data_ptr()), ld,
                ctypes.c_void_p(d.data_ptr()), ld, ctypes.byref(heur.algo), ctypes.c_void_p(self.workspace.data_ptr()),
                ctypes.c_size_t(WORKSPACE), stream)
        keep = (a, b, d, desc, la, lb, ld, pref, heur, alpha, beta)

        def call():
            self.check(self.lib.cublasLtMatmul(*args), "cublasLtMatmul")
        call.keep = keep
        return call


def main():
    out, t0 = start_measurement()
    lt = Lt()
    res = {**device_info(), "method": __doc__.split("Timing: ")[1].split("\n    python3")[0],
           "cublaslt": lt.path, "cublaslt_header": lt.header,
           "enums": {name: lt.enum(name) for name in DEFAULTS}, "rows": []}
    print(lt.path, lt.header, res["enums"], flush=True)
    for name, m, n, k in suite_shapes():
        row = {"name": name, "m": m, "n": n, "k": k}
        flops = 2.0 * m * n * k
        variants = [("bf16_out", False, False, False), ("bf16_fp32_accumulate", False, True, False),
                    ("fp8_bf16_out", True, False, False), ("fp8_fp32_accumulate", True, True, False)]
        if not name.startswith("grid"):
            variants += [("bf16_nt_out", False, False, True), ("bf16_nt_fp32_accumulate", False, True, True)]
        for tag, fp8, acc, nt in variants:
            try:
                t = timed(lt.gemm(m, n, k, fp8, acc, nt))
                row[tag + "_time_s"], row[tag + "_tflops"] = t, flops / t / 1e12
            except RuntimeError as e:
                row[tag + "_error"] = str(e)[:200]
            torch.cuda.empty_cache()
        if not name.startswith("grid"):
            # The earlier method (llama_layer_h200.py): out-of-place torch.addmm into a new FP32 tensor.
            dyt = torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
            xx = torch.randn(k, n, device=DEV, dtype=torch.bfloat16)
            g32 = torch.zeros(m, n, device=DEV, dtype=torch.float32)
            t = timed(lambda: torch.addmm(g32, dyt, xx, out_dtype=torch.float32))
            row["torch_addmm_fp32_time_s"] = t
            del dyt, xx, g32
            torch.cuda.empty_cache()
        print(row, flush=True)
        res["rows"].append(row)
    write_measurement(res, out, t0)


if __name__ == "__main__":
    main()
