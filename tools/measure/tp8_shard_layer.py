"""One transformer layer of a tensor-parallel shard of the 175B model (TP 8: hidden 12288,
16 local heads of 96, FFN 6144 local), eager PyTorch bf16 on the GPU, without the TP
communication: the unit of work the host-overhead measurements run."""
import torch
import torch.nn.functional as F

DEV = "cuda"
DT = torch.bfloat16
S, H, HEADS, D, FFN = 2048, 12288, 16, 96, 6144


class ShardLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(H, device=DEV, dtype=DT)
        self.qkv = torch.nn.Linear(H, 3 * HEADS * D, device=DEV, dtype=DT)
        self.proj = torch.nn.Linear(HEADS * D, H, device=DEV, dtype=DT)
        self.ln2 = torch.nn.LayerNorm(H, device=DEV, dtype=DT)
        self.fc1 = torch.nn.Linear(H, FFN, device=DEV, dtype=DT)
        self.fc2 = torch.nn.Linear(FFN, H, device=DEV, dtype=DT)

    def forward(self, x):
        h = self.ln1(x)
        q, k, v = self.qkv(h).view(1, S, 3, HEADS, D).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        a = a.transpose(1, 2).reshape(S, HEADS * D)
        x = x + F.dropout(self.proj(a), 0.1)
        h = self.ln2(x)
        return x + F.dropout(self.fc2(F.gelu(self.fc1(h))), 0.1)
