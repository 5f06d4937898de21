"""Exceptions and warnings raised by ragcore."""


class IndexFileError(ValueError):
    """An index file is damaged, truncated, foreign or of an unsupported version."""


class CopyWarning(UserWarning):
    """ragcore had to copy or convert an input array (dtype or memory layout).

    Pass C-contiguous float32 to avoid the copy, or filter this warning.
    """


class TruncationWarning(UserWarning):
    """Some texts were longer than the model's max_length and were cut.

    The count is also on the result (``Embeddings.truncated``).
    """
