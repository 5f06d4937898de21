"""Dense vector search: FlatIndex (exact), IVFIndex (inverted file; float, float16, bfloat16,
sq8, pq4 or RaBitQ codes re-scored exactly), HNSWIndex (graph), PQIndex (4-bit
product-quantisation codes scanned by SIMD look-ups, re-scored exactly) and GpuFlatIndex (exact, on a CUDA device)."""

from .flat import METRICS, FlatIndex
from .gpu import DeviceHits, GpuFlatIndex
from .hnsw import HNSWIndex
from .pq import PQIndex
from .ivf import IVFIndex

__all__ = ["METRICS", "DeviceHits", "FlatIndex", "GpuFlatIndex", "HNSWIndex", "IVFIndex", "PQIndex"]
