"""Fixtures of the encoder tests."""

import numpy as np
import pytest

from _random_bert import random_bert


@pytest.fixture
def tiny_bert(tmp_path):
    """A random 2-layer BERT written as ragcore's fused graph, as an .onnx file."""
    onnx = pytest.importorskip("onnx")
    from ragcore.encoders.build import bert_graph

    weights, config = random_bert(np.random.default_rng(0), layers=2, heads=2, head_size=4)
    path = tmp_path / "tiny_bert.onnx"
    onnx.save(bert_graph.fused_bert(weights, config), str(path))
    return path
