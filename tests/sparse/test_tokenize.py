"""The native tokenizer against Python's regex, stopwords, stemming and bad input."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings, strategies as st

import ragcore
from ragcore.sparse.tokenizer import STOPWORDS_EN

PATTERN = re.compile(r"(?u)\b\w\w+\b")


def python_tokens(text: str) -> list[str]:
    return PATTERN.findall(text.lower())


# Characters that exercise the tables: letters of many scripts, digits of other
# scripts, combining marks, the final-sigma context, İ (two code points when
# lowercased), case-ignorable apostrophes and dots.
TRICKY = "ΣσςΑΣ.Σ'ΣİIıi\u0307\u0345ß_-'’·:0١२Ⅻ½ǅǈ\u00ad\u200d\u2019 \t\nA1"

texts = st.text(
    alphabet=st.one_of(st.characters(blacklist_categories=("Cs",)), st.sampled_from(TRICKY)),
    max_size=60,
)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_equals_python_regex_on_unicode_text(text):
    assert ragcore.tokenize(text) == python_tokens(text)


@settings(max_examples=100, deadline=None)
@given(st.lists(texts, max_size=8))
def test_batch_equals_one_by_one(batch):
    assert ragcore.tokenize(batch) == [python_tokens(t) for t in batch]


@pytest.mark.parametrize("text", [
    "ΟΔΟΣ ΟΔΟΣ.", "ΑΣ'Σ x", "Σ", "aΣ", "AΣb", "A\u0345Σ", "İstanbul", "ǅemal ǈ", "x_y _ __",
    "Ⅻ½ 12 ١٢", "naïve café", "\u00adA\u00adΣ\u00ad", "",
])
def test_known_cases(text):
    assert ragcore.tokenize(text) == python_tokens(text)


def test_every_code_point_is_classified_like_python():
    # One text per run of code points, each character between spaces and doubled so
    # that word characters form two-character tokens.
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    for start in range(0, len(chars), 8192):
        text = " ".join(c + c for c in chars[start : start + 8192])
        assert ragcore.tokenize(text) == python_tokens(text), hex(ord(chars[start]))


def test_bytes_are_utf8():
    assert ragcore.tokenize("Grüße aus Köln".encode()) == ["grüße", "aus", "köln"]


@pytest.mark.parametrize("bad", [b"ok \xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"ab\xe2\x82"])
def test_invalid_utf8_names_the_document(bad):
    with pytest.raises(ValueError, match="document 2 is not valid UTF-8"):
        ragcore.tokenize([b"fine", "also fine", bad])


def test_lone_surrogate_names_the_document():
    with pytest.raises(ValueError, match="document 1 cannot be encoded as UTF-8"):
        ragcore.tokenize(["fine", "bad \ud800"])


def test_wrong_types():
    with pytest.raises(TypeError, match="document 1 must be str or bytes"):
        ragcore.tokenize(["fine", 3])


def test_stopwords_and_stemmer():
    text = "The runners were running to the races"
    assert ragcore.tokenize(text, stopwords="en") == ["runners", "were", "running", "races"]
    assert ragcore.tokenize(text, stopwords=["were", "the"]) == ["runners", "running", "to", "races"]
    pytest.importorskip("Stemmer")
    assert ragcore.tokenize(text, stopwords="en", stemmer="english") == ["runner", "were", "run", "race"]
    assert set(STOPWORDS_EN) >= {"the", "to", "and"} and len(STOPWORDS_EN) == 33


def test_bad_options():
    with pytest.raises(ValueError, match="unknown stopwords 'fr'"):
        ragcore.tokenize("x", stopwords="fr")
    pytest.importorskip("Stemmer")
    with pytest.raises(ValueError, match="unknown stemmer 'klingon'"):
        ragcore.tokenize("x", stemmer="klingon")
