"""Dense vector search: FlatIndex (exact), IVFIndex (inverted file; float, float16, bfloat16 or
sq8 codes re-scored exactly), HNSWIndex (graph) and GpuFlatIndex (exact, on a CUDA device)."""

from .flat import METRICS, FlatIndex
from .gpu import DeviceHits, GpuFlatIndex
from .hnsw import HNSWIndex
from .ivf import IVFIndex

__all__ = ["METRICS", "DeviceHits", "FlatIndex", "GpuFlatIndex", "HNSWIndex", "IVFIndex"]
