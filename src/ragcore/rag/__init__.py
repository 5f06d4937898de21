"""The RAG layer over the indexes: chunking, fusion, the hybrid retrieval pipeline, context
assembly and the persistent Collection. Heavy dependencies (the encoders' onnxruntime) are
imported only when used."""

from . import chunking, collection, context, fusion, pipeline

__all__ = ["chunking", "collection", "context", "fusion", "pipeline"]
