"""The RAG layer over the indexes: chunking, fusion (normalisations, tuning from labels), maximal
marginal relevance, the hybrid retrieval pipeline and context assembly. Heavy dependencies (the
encoders' onnxruntime) are imported only when used."""

from . import chunking, context, fusion, mmr, normalize, pipeline, tuning

__all__ = ["chunking", "context", "fusion", "mmr", "normalize", "pipeline", "tuning"]
