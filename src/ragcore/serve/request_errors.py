"""The error a request is answered with: an HTTP status and a JSON body naming the field."""

from __future__ import annotations


class RequestError(Exception):
    """A request the service refuses: ``status`` (4xx, or 503), ``field`` (the part of the
    request at fault, dotted: "filter", "queries.3", "body"), ``message``."""

    def __init__(self, status: int, field: str, message: str):
        super().__init__(message)
        self.status, self.field, self.message = status, field, message

    def body(self) -> dict:
        return {"error": self.message, "field": self.field}


def from_collection_error(err: Exception, field: str) -> RequestError:
    """A Collection's refusal (FilterError, CollectionError, ValueError, TypeError) as a
    4xx: a filter's fault names "filter"; otherwise the field given."""
    from ..errors import CollectionLockedError, FilterError

    if isinstance(err, FilterError):
        return RequestError(422, "filter", str(err))
    if isinstance(err, CollectionLockedError):
        return RequestError(503, "collection", str(err))
    return RequestError(422, field, str(err))
