"""ragcore: a retrieval engine for RAG and search whose hot paths are native code."""

from .bm25 import BM25Index
from .encoders import BiEncoder, CrossEncoder, Embeddings, LateInteractionReranker
from .errors import CopyWarning, IndexFileError, TruncationWarning
from .flat import FlatIndex
from ._cuda_device import cuda_device_count
from .gpu_bm25 import GpuBM25Index
from .gpu_flat import DeviceHits, GpuFlatIndex
from .hits import Hits
from .ivf import IVFIndex
from .tokenizer import tokenize

from . import evaluate, fusion  # submodules: ragcore.fusion.rrf, ragcore.evaluate.evaluate

__version__ = "0.1.0"

__all__ = [
    "BM25Index", "BiEncoder", "CopyWarning", "CrossEncoder", "DeviceHits", "Embeddings",
    "FlatIndex", "GpuBM25Index", "GpuFlatIndex", "Hits", "IVFIndex", "IndexFileError", "LateInteractionReranker",
    "TruncationWarning", "__version__", "cuda_device_count", "evaluate", "fusion", "tokenize",
]
