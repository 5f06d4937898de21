"""The faithfulness scaffold with a fake judge (no model is involved or claimed)."""

from __future__ import annotations

import pytest

from ragcore.evaluate import ABSTENTION, faithfulness
from ragcore.evaluate.faithfulness import split_sentences, strip_citations

PASSAGES = ["Paris is the capital of France.", "The Seine flows through Paris."]


def word_overlap_judge(sentence, passages):
    """A fake judge: the share of the sentence's words found in the passages."""
    words = set(" ".join(passages).lower().replace(".", "").split())
    mine = sentence.lower().rstrip(".!?").split()
    return sum(w in words for w in mine) / len(mine)


def test_citations_are_stripped_and_sentences_split():
    assert strip_citations("Paris is big [1]. It has a river[^2] [3, 4].") == "Paris is big. It has a river."
    assert split_sentences("One. Two! 3 is a number? yes. Four") == ["One.", "Two!", "3 is a number? yes.", "Four"]


def test_scores_each_sentence_with_the_judge():
    calls = []

    def judge(sentence, passages):
        calls.append((sentence, passages))
        return word_overlap_judge(sentence, passages)

    got = faithfulness("Paris is the capital of France [1]. The Seine flows through Lyon [2].",
                       PASSAGES, judge)
    assert [c[0] for c in calls] == ["Paris is the capital of France.", "The Seine flows through Lyon."]
    assert calls[0][1] == PASSAGES
    assert [v.supported for v in got.sentences] == [True, True]  # 4/5 words >= 0.5
    assert got.score == 1.0
    strict = faithfulness("Paris is the capital of France [1]. The Seine flows through Lyon [2].",
                          PASSAGES, judge, threshold=0.9)
    assert strict.score == 0.5 and strict.sentences[1].probability == pytest.approx(0.8)


def test_abstention_returns_none():
    assert faithfulness(ABSTENTION, PASSAGES, word_overlap_judge) is None
    assert faithfulness(f"  {ABSTENTION} [1]", PASSAGES, word_overlap_judge) is None
    assert faithfulness("No.", PASSAGES, lambda s, p: 0.0, abstention="No.") is None


def test_errors():
    with pytest.raises(ValueError, match="judge must return a probability in \\[0, 1\\], got 1.5"):
        faithfulness("Paris.", PASSAGES, lambda s, p: 1.5)
    with pytest.raises(ValueError, match="answer has no sentences"):
        faithfulness(" [1] ", PASSAGES, word_overlap_judge)
    with pytest.raises(TypeError, match="judge must be a callable"):
        faithfulness("Paris.", PASSAGES, None)
    with pytest.raises(ValueError, match="threshold must be a number in \\[0, 1\\]"):
        faithfulness("Paris.", PASSAGES, word_overlap_judge, threshold=2)
