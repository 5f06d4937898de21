"""The bounds every request to ``ragcore serve`` is checked against (a larger request is
refused with a 4xx naming the field, before any work is done)."""

MAX_BODY_BYTES = 8 * 1024 * 1024     # a request body; larger is 413
MAX_QUERIES = 256                    # queries in one POST /search
MAX_QUERY_CHARS = 4096               # characters of one query
MAX_K = 1000                         # results per query (k) and candidates (k0)
MAX_DOCUMENTS = 1000                 # documents in one POST /documents or DELETE /documents
MAX_TEXT_CHARS = 1_000_000           # characters of one document
MAX_ID_CHARS = 512                   # characters of a string id
MAX_DIM = 65_536                     # entries of one vector (FlatIndex's own limit)
