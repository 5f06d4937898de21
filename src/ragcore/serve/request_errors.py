"""Refusals of the service as ServiceError (status, field, message), and their JSON body."""

from __future__ import annotations

from ..errors import ServiceError


def refusal(status: int, field: str, message: str) -> ServiceError:
    return ServiceError(message, status, field)


def body(err: ServiceError) -> dict:
    return {"error": str(err), "field": err.field}


def from_collection_error(err: Exception, field: str) -> ServiceError:
    """A Collection's refusal (FilterError, CollectionError, ValueError, TypeError) as a
    4xx: a filter's fault names "filter"; otherwise the field given."""
    from ..errors import CollectionLockedError, FilterError

    if isinstance(err, FilterError):
        return refusal(422, "filter", str(err))
    if isinstance(err, CollectionLockedError):
        return refusal(503, "collection", str(err))
    return refusal(422, field, str(err))
