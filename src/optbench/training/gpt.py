"""A character-level GPT of nanoGPT's shape (Karpathy's nanoGPT model, without dropout), written here.

`CharGPT(vocab_size, width, layers, heads, context)`: token and position embeddings (`stem`), `layers`
pre-norm transformer blocks (causal self-attention through torch's scaled_dot_product_attention, and a
4x GELU MLP), a final LayerNorm and a linear head tied to the token embedding, as nanoGPT ties them. No
biases in the linear layers and LayerNorms (nanoGPT's `bias=False`). nanoGPT's initialisation: normal
(0, 0.02), and 0.02 / sqrt(2 * layers) for each residual projection (GPT-2). The forward pass takes
(batch, context) token ids and returns logits flattened to (batch * context, vocab), so the training step
and evaluation treat every position as one example of next-character classification. Modules are named
`stem` (embeddings), `blocks`, `norm` and `head`: Muon takes the blocks' 2-D matrices, AdamW the
embeddings, the tied head, the norms (training/optim.py).
"""

import math

import torch
from torch import nn

INIT_STD = 0.02  # nanoGPT / GPT-2


class CausalSelfAttention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.proj = nn.Linear(width, width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        query, key, value = (
            part.view(batch, length, self.heads, width // self.heads).transpose(1, 2)
            for part in self.qkv(x).split(width, dim=2)
        )
        attended = nn.functional.scaled_dot_product_attention(query, key, value, is_causal=True)
        return self.proj(attended.transpose(1, 2).reshape(batch, length, width))


class Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.attention_norm = nn.LayerNorm(width, bias=False)
        self.attention = CausalSelfAttention(width, heads)
        self.mlp_norm = nn.LayerNorm(width, bias=False)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width, bias=False), nn.GELU(), nn.Linear(4 * width, width, bias=False)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x))
        return x + self.mlp(self.mlp_norm(x))


class Embeddings(nn.Module):
    def __init__(self, vocab_size: int, width: int, context: int):
        super().__init__()
        self.token = nn.Embedding(vocab_size, width)
        self.position = nn.Embedding(context, width)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        return self.token(tokens) + self.position(positions)


class CharGPT(nn.Module):
    def __init__(self, vocab_size: int, width: int = 128, layers: int = 4, heads: int = 4, context: int = 64):
        super().__init__()
        if width % heads:
            raise ValueError(f"model.width={width} must be a multiple of model.heads={heads}")
        self.stem = Embeddings(vocab_size, width, context)
        self.blocks = nn.Sequential(*(Block(width, heads) for _ in range(layers)))
        self.norm = nn.LayerNorm(width, bias=False)
        self.head = nn.Linear(width, vocab_size, bias=False)
        self.head.weight = self.stem.token.weight  # tied (nanoGPT, Press & Wolf 2017)
        self.apply(_init_weights)
        for name, parameter in self.named_parameters():
            if name.endswith(("attention.proj.weight", "mlp.2.weight")):  # residual projections
                nn.init.normal_(parameter, 0.0, INIT_STD / math.sqrt(2 * layers))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        logits = self.head(self.norm(self.blocks(self.stem(tokens))))
        return logits.view(-1, logits.shape[-1])


def _init_weights(module: nn.Module) -> None:
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, 0.0, INIT_STD)
