"""One transformer layer of a tensor-parallel shard (default: the 175B model at TP 8: hidden
12288, 16 local heads of 96, FFN 6144 local, one sequence of 2048), eager PyTorch bf16 on the
GPU, without the TP communication: the unit of work the host-overhead and layer-time
measurements run."""
import torch
import torch.nn.functional as F

DEV = "cuda"
DT = torch.bfloat16
S, H, HEADS, D, FFN = 2048, 12288, 16, 96, 6144


class ShardLayer(torch.nn.Module):
    def __init__(self, h=H, heads=HEADS, d=D, ffn=FFN, batch=1, seq=S):
        super().__init__()
        self.heads, self.d, self.batch, self.seq = heads, d, batch, seq
        self.ln1 = torch.nn.LayerNorm(h, device=DEV, dtype=DT)
        self.qkv = torch.nn.Linear(h, 3 * heads * d, device=DEV, dtype=DT)
        self.proj = torch.nn.Linear(heads * d, h, device=DEV, dtype=DT)
        self.ln2 = torch.nn.LayerNorm(h, device=DEV, dtype=DT)
        self.fc1 = torch.nn.Linear(h, ffn, device=DEV, dtype=DT)
        self.fc2 = torch.nn.Linear(ffn, h, device=DEV, dtype=DT)

    def forward(self, x):  # x: [batch * seq, h]
        b, s, n, d = self.batch, self.seq, self.heads, self.d
        h = self.ln1(x)
        q, k, v = self.qkv(h).view(b, s, 3, n, d).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        a = a.transpose(1, 2).reshape(b * s, n * d)
        x = x + F.dropout(self.proj(a), 0.1)
        h = self.ln2(x)
        return x + F.dropout(self.fc2(F.gelu(self.fc1(h))), 0.1)
