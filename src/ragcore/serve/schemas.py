"""The JSON bodies of the API, as pydantic models: unknown fields, wrong types and values
out of bounds are refused (422, naming the field) before a request reaches the collection."""

from __future__ import annotations

from typing import Annotated, Any, Dict, List, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr

from . import limits

Query = Annotated[StrictStr, Field(max_length=limits.MAX_QUERY_CHARS)]
DocId = Union[Annotated[StrictInt, Field(ge=-(2**63), le=2**63 - 1)],
              Annotated[StrictStr, Field(min_length=1, max_length=limits.MAX_ID_CHARS)]]
Vector = Annotated[List[Union[StrictFloat, StrictInt]],
                   Field(min_length=1, max_length=limits.MAX_DIM)]
FusionName = Literal["rrf", "wsum", "combsum", "combmnz"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class FusionOptions(_Body):
    """ragcore.rag.fusion.combine's options."""

    method: Literal["wsum", "combsum", "combmnz"] = "wsum"
    norm: Optional[Literal["minmax", "zscore", "theoretical", "none"]] = None
    weights: Optional[Annotated[List[Union[StrictFloat, StrictInt]],
                                Field(min_length=2, max_length=2)]] = None


class SearchRequest(_Body):
    """One query (``query``) or several (``queries``); ``vector`` / ``vectors``: their
    embeddings computed elsewhere (the server then encodes nothing)."""

    query: Optional[Query] = None
    queries: Optional[Annotated[List[Query], Field(min_length=1,
                                                    max_length=limits.MAX_QUERIES)]] = None
    vector: Optional[Vector] = None
    vectors: Optional[Annotated[List[Vector], Field(min_length=1,
                                                     max_length=limits.MAX_QUERIES)]] = None
    k: Annotated[StrictInt, Field(ge=1, le=limits.MAX_K)] = 10
    k0: Optional[Annotated[StrictInt, Field(ge=1, le=limits.MAX_K)]] = None
    mode: Literal["hybrid", "dense", "sparse"] = "hybrid"
    filter: Optional[Dict[str, Any]] = None
    fusion: Optional[Union[FusionName, FusionOptions]] = None
    by: Literal["chunk", "document"] = "chunk"
    include_text: StrictBool = True


class AddRequest(_Body):
    texts: Annotated[List[Annotated[StrictStr, Field(max_length=limits.MAX_TEXT_CHARS)]],
                     Field(min_length=1, max_length=limits.MAX_DOCUMENTS)]
    ids: Optional[Annotated[List[DocId], Field(max_length=limits.MAX_DOCUMENTS)]] = None
    metadata: Optional[Annotated[List[Dict[str, Any]],
                                 Field(max_length=limits.MAX_DOCUMENTS)]] = None
    embeddings: Optional[Annotated[List[Vector], Field(max_length=limits.MAX_DOCUMENTS)]] = None
    upsert: StrictBool = False


class DeleteRequest(_Body):
    ids: Annotated[List[DocId], Field(min_length=1, max_length=limits.MAX_DOCUMENTS)]
    missing_ok: StrictBool = False
