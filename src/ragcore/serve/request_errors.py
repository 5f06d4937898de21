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
    from ..errors import CollectionLockedError, FilterError, ShardError

    if isinstance(err, FilterError):
        return refusal(422, "filter", str(err))
    if isinstance(err, (CollectionLockedError, ShardError)):  # a lock or a shard: retry
        return refusal(503, "collection", str(err))
    return refusal(422, field, str(err))


def search_refusal(err: Exception, vectors_given: bool) -> ServiceError | None:
    """What a search that raised err answers (None: a fault of the service, re-raised)."""
    from ..errors import CollectionCorruptError, RagcoreError

    if isinstance(err, ServiceError):
        return err
    if isinstance(err, CollectionCorruptError):
        return refusal(503, "collection", str(err))
    if isinstance(err, (RagcoreError, ValueError, TypeError)):
        field = "vectors" if vectors_given and "query_vector" in str(err) else "query"
        return from_collection_error(err, field)
    return None


def as_reply(err: ServiceError) -> dict:
    """A refusal as a plain dict (it crosses a Ray handle unchanged); from_reply undoes it."""
    return {"error": str(err), "field": err.field, "status": err.status}


def from_reply(reply):
    """reply, unless it is as_reply's dict: then its ServiceError is raised."""
    if isinstance(reply, dict) and "error" in reply:
        raise refusal(reply["status"], reply["field"], reply["error"])
    return reply
