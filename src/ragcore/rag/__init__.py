"""The RAG layer over the indexes: chunking, fusion (normalisations, tuning from labels), maximal
marginal relevance, the hybrid retrieval pipeline, context assembly and the persistent
Collection. Heavy dependencies (the encoders' onnxruntime) are imported only when used."""

from . import chunking, collection, context, fusion, mmr, normalize, pipeline, tuning

__all__ = ["chunking", "collection", "context", "fusion", "mmr", "normalize", "pipeline", "tuning"]
