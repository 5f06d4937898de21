"""Evaluation: trec_eval's ranking metrics, TREC files, evidence spans, comparison, faithfulness.

    from ragcore.evaluate import evaluate
    result = evaluate(hits, qrels, ["ndcg@10", "recall@100", "mrr", "map"], docids=doc_names,
                      qids=query_ids)
    result.mean["ndcg@10"], result.per_query["ndcg@10"]
"""

from ._data import Qrels, Run
from ._metrics import ALIASES, METRICS, TIES, Evaluation, evaluate, parse_metric
from ._trec_io import read_qrels, read_run, write_qrels, write_run
from .compare import Comparison, compare, sign_test
from .evidence import evaluate_evidence
from .faithfulness import ABSTENTION, Faithfulness, SentenceVerdict, faithfulness

__all__ = [
    "ABSTENTION", "ALIASES", "METRICS", "TIES", "Comparison", "Evaluation", "Faithfulness",
    "Qrels", "Run", "SentenceVerdict", "compare", "evaluate", "evaluate_evidence",
    "faithfulness", "parse_metric", "read_qrels", "read_run", "sign_test", "write_qrels",
    "write_run",
]
