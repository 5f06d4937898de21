"""tantivy: an in-RAM index with its default tokenizer, the row number kept as a fast field;
per query (its Python binding has no batch call) parse_query, search without counting the
matches (count=False, so its top-k collector may skip blocks: block-max WAND) and the ids of
the hits read from the fast field in one call (bm25)."""

from __future__ import annotations

LIBRARY, DISTRIBUTION = "tantivy", "tantivy"


class Bm25:
    name = "tantivy"

    def __init__(self, threads, workdir):
        self.threads = threads

    def build(self, texts):
        import tantivy

        builder = tantivy.SchemaBuilder()
        builder.add_text_field("body", stored=False)
        builder.add_integer_field("id", fast=True)
        self.index = tantivy.Index(builder.build())
        writer = self.index.writer(heap_size=256 << 20, num_threads=self.threads)
        for i, text in enumerate(texts):
            writer.add_document(tantivy.Document(body=text, id=i))
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()
        self.searcher = self.index.searcher()

    def search(self, queries, k):
        index, searcher = self.index, self.searcher
        out = []
        for q in queries:
            hits = searcher.search(index.parse_query(q, ["body"]), k, count=False).hits
            out.append(searcher.fast_field_values("id", [address for _, address in hits]))
        return out


TASKS = {"bm25": [Bm25]}
