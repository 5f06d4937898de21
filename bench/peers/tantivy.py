"""tantivy: an in-RAM index with its default tokenizer; one search call per query (bm25)."""

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
        builder.add_integer_field("id", stored=True)
        self.index = tantivy.Index(builder.build())
        writer = self.index.writer(heap_size=256 << 20, num_threads=self.threads)
        for i, text in enumerate(texts):
            writer.add_document(tantivy.Document(body=text, id=i))
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()
        self.searcher = self.index.searcher()

    def search(self, queries, k):
        out = []
        for q in queries:
            hits = self.searcher.search(self.index.parse_query(q, ["body"]), k).hits
            out.append([self.searcher.doc(a)["id"][0] for _, a in hits])
        return out


TASKS = {"bm25": [Bm25]}
