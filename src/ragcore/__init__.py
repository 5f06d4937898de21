"""ragcore: a retrieval engine for RAG and search whose hot paths are native code."""

from .sparse.bm25 import BM25Index
from .encoders import BiEncoder, CrossEncoder, Embeddings, LateInteractionReranker
from .errors import (CollectionCorruptError, CollectionError, CollectionLockedError, CopyWarning,
                     FilterError, HaproxyNotFoundError, IndexFileError, RagcoreError,
                     ServiceError, ShardError, ShardUnavailableError, TruncationWarning)
from .dense.flat import FlatIndex
from ._util.cuda import cuda_device_count
from .sparse.gpu import GpuBM25Index
from .dense.gpu import DeviceHits, GpuFlatIndex
from .hits import Hits
from .dense.ivf import IVFIndex
from .dense.hnsw import HNSWIndex
from .dense.pq import PQIndex
from .sparse.tokenizer import tokenize
from .rag.collection import Collection

from . import evaluate, rag  # submodules: ragcore.rag.fusion.rrf, ragcore.evaluate.evaluate

__version__ = "0.1.0"

__all__ = [
    "BM25Index", "BiEncoder", "Collection", "CollectionCorruptError", "CollectionError",
    "CollectionLockedError", "CopyWarning", "CrossEncoder", "DeviceHits", "Embeddings",
    "FilterError", "FlatIndex", "GpuBM25Index", "GpuFlatIndex", "HNSWIndex",
    "HaproxyNotFoundError", "Hits", "IVFIndex", "IndexFileError", "LateInteractionReranker",
    "PQIndex", "RagcoreError", "ServiceError", "ShardError", "ShardUnavailableError",
    "TruncationWarning", "__version__", "cuda_device_count", "evaluate", "rag", "tokenize",
]
