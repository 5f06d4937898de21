"""ragcore: a retrieval engine for RAG and search whose hot paths are native code."""

from .errors import CopyWarning, IndexFileError
from .flat import FlatIndex
from .hits import Hits

from . import evaluate, fusion  # submodules: ragcore.fusion.rrf, ragcore.evaluate.evaluate

__version__ = "0.1.0"

__all__ = ["CopyWarning", "FlatIndex", "Hits", "IndexFileError", "__version__", "evaluate", "fusion"]
