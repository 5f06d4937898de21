"""The RAG layer over the indexes: chunking, fusion, the hybrid retrieval pipeline and context
assembly. Heavy dependencies (the encoders' onnxruntime) are imported only when used."""

from . import chunking, context, fusion, pipeline

__all__ = ["chunking", "context", "fusion", "pipeline"]
