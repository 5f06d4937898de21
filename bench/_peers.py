"""Pieces shared by bench/latency.py and bench/bm25_peers.py: the tantivy peer and the
ending of a run (results written as JSON and markdown)."""

from __future__ import annotations

from _common import RESULTS_DIR, environment, foreign_cores, write_json, write_text


def tantivy_index(texts: list[str]):
    """(index, searcher) of texts in RAM, default tokenizer, document i stored with id i."""
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", stored=False)
    builder.add_unsigned_field("id", stored=True)
    index = tantivy.Index(builder.build())
    writer = index.writer(heap_size=512 << 20, num_threads=1)
    for i, text in enumerate(texts):
        writer.add_document(tantivy.Document(body=text, id=i))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return index, index.searcher()


def tantivy_ids(index, searcher, query: str, k: int) -> set[int]:
    hits = searcher.search(index.parse_query(query, ["body"]), k).hits
    return {searcher.doc(address)["id"][0] for _, address in hits}


def finish(name: str, results: dict, load, args, report) -> None:
    """Adds the load others put on the machine, writes bench/results/<name>.{json,md}."""
    results["other_load_cores"] = foreign_cores(load.report())
    write_json(RESULTS_DIR / f"{name}.json", {"environment": environment(), "args": vars(args),
                                              "results": results})
    text = report(results, args)
    write_text(RESULTS_DIR / f"{name}.md", text)
    print(text)
