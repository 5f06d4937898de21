"""ragcore: a retrieval engine for RAG and search whose hot paths are native code."""

from .bm25 import BM25Index
from .errors import CopyWarning, IndexFileError
from .flat import FlatIndex
from .hits import Hits
from .tokenizer import tokenize

__version__ = "0.1.0"

__all__ = [
    "BM25Index", "CopyWarning", "FlatIndex", "Hits", "IndexFileError", "__version__", "tokenize",
]
