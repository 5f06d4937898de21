"""torch (CPU): torch.topk of queries @ corpus.T (exact)."""

from __future__ import annotations

LIBRARY, DISTRIBUTION = "torch", "torch"


class Exact:
    name = "torch"

    def __init__(self, threads):
        self.threads = threads

    def build(self, x):
        import torch

        torch.set_num_threads(self.threads)
        self.x = torch.from_numpy(x)

    def search(self, q, k):
        import torch

        torch.set_num_threads(self.threads)
        with torch.inference_mode():
            return torch.topk(torch.from_numpy(q) @ self.x.T, k, dim=1).indices.numpy()


class ExactBf16(Exact):
    """Corpus and queries in bfloat16 (oneDNN's bf16 matmul: AMX or AVX512_BF16 where the CPU
    has them)."""
    name = "torch bf16"

    def build(self, x):
        import torch

        super().build(x)
        self.x = self.x.to(torch.bfloat16)

    def search(self, q, k):
        import torch

        torch.set_num_threads(self.threads)
        with torch.inference_mode():
            scores = torch.from_numpy(q).to(torch.bfloat16) @ self.x.T
            return torch.topk(scores, k, dim=1).indices.numpy()


TASKS = {"exact": [Exact, ExactBf16]}
