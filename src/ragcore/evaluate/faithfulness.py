"""A faithfulness scaffold: does each sentence of an answer follow from the passages?

No model is bundled or claimed: the caller passes a judge, any callable
``judge(sentence, passages) -> probability in [0, 1]`` (an NLI model, an LLM prompt, ...).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# The fixed sentence the grounded prompt (ragcore.context) asks the model to reply with when
# the sources do not hold the answer; an answer that is exactly this is an abstention.
from ..rag.context import ABSTENTION

_CITATION = re.compile(r"\s*\[\^?\d+(?:\s*,\s*\^?\d+)*\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")


@dataclass(frozen=True)
class SentenceVerdict:
    sentence: str
    probability: float
    supported: bool


@dataclass(frozen=True)
class Faithfulness:
    """Fraction of sentences the judge finds supported, and the verdict of each."""

    score: float
    sentences: list


def strip_citations(text: str) -> str:
    """Remove citation markers such as [1], [2, 3] and [^2]."""
    return _CITATION.sub("", text)


def split_sentences(text: str) -> list:
    """Sentences of text: a split after . ! or ? followed by space and a capital or digit."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def faithfulness(answer: str, passages, judge, threshold: float = 0.5,
                 abstention: str = ABSTENTION):
    """Score an answer's sentences against passages with a judge; None for an abstention."""
    if not isinstance(answer, str):
        raise TypeError(f"answer must be a string, got {type(answer).__name__}")
    if not callable(judge):
        raise TypeError("judge must be a callable judge(sentence, passages) -> probability")
    if not (isinstance(threshold, (int, float)) and 0 <= threshold <= 1):
        raise ValueError(f"threshold must be a number in [0, 1], got {threshold!r}")
    passages = [passages] if isinstance(passages, str) else list(passages)
    text = " ".join(strip_citations(answer).split())
    if text == " ".join(abstention.split()):
        return None
    sentences = split_sentences(text)
    if not sentences:
        raise ValueError("answer has no sentences to judge")
    verdicts = []
    for sentence in sentences:
        p = judge(sentence, passages)
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not (0 <= p <= 1) or math.isnan(p):
            raise ValueError(f"judge must return a probability in [0, 1], got {p!r} for {sentence!r}")
        verdicts.append(SentenceVerdict(sentence, float(p), p >= threshold))
    return Faithfulness(sum(v.supported for v in verdicts) / len(verdicts), verdicts)
