"""ragcore: a retrieval engine for RAG and search whose hot paths are native code."""

from .errors import CopyWarning, IndexFileError
from .flat import FlatIndex
from .gpu_flat import DeviceHits, GpuFlatIndex, cuda_device_count
from .hits import Hits

__version__ = "0.1.0"

__all__ = [
    "CopyWarning", "DeviceHits", "FlatIndex", "GpuFlatIndex", "Hits", "IndexFileError",
    "__version__", "cuda_device_count",
]
