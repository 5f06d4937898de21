"""ONNX text encoders: BiEncoder (texts to vectors), CrossEncoder (pairs to scores)
and LateInteractionReranker (ColBERT-style MaxSim over BiEncoder token vectors).

onnxruntime and tokenizers are imported when an encoder is created, not here.
"""

from ._text import TextTokenizer
from .bi_encoder import BiEncoder, Embeddings
from .cross_encoder import CrossEncoder
from .defaults import default_encoder
from .late_interaction import LateInteractionReranker

__all__ = ["BiEncoder", "CrossEncoder", "Embeddings", "LateInteractionReranker", "TextTokenizer",
           "default_encoder"]
