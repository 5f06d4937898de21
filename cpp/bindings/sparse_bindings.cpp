// Bindings of the tokenizer, the vocabulary and the BM25 index (registered from
// module.cpp). Conversion, checks, GIL release and error translation only:
// arguments are validated and explained in src/ragcore/sparse/bm25.py and
// tokenizer.py.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "array_checks.h"
#include "ragcore/sparse/bm25_index.h"
#include "ragcore/sparse/tokenize.h"
#include "ragcore/sparse/vocabulary.h"
#include "text_views.h"
#include "ragcore/util/result_bound.h"

namespace py = pybind11;
using namespace ragcore;
using namespace ragcore_bindings;

namespace {

template <class T>
const T* data_of(const py::array& a, const std::string& name) {
  if (!py::isinstance<py::array_t<T>>(a) || a.ndim() != 1 || !(a.flags() & py::array::c_style))
    throw std::invalid_argument(name + ": expected a contiguous 1-D array of the right dtype");
  return static_cast<const T*>(a.data());
}

// Flattened queries (terms, weights, offsets), copied and then checked: the copy is what the
// native code reads once the GIL is released, so another thread changing the caller's arrays
// meanwhile cannot undo the checks.
struct CheckedQueries {
  std::vector<int64_t> terms;
  std::vector<double> weights;
  std::vector<int64_t> offsets;
  QueryBatch batch() const {
    return {terms.data(), weights.data(), offsets.data(), offsets.size() - 1};
  }
};

CheckedQueries checked_queries(const py::array& terms, const py::array& weights,
                               const py::array& offsets) {
  const int64_t* t = data_of<int64_t>(terms, "terms");
  const double* w = data_of<double>(weights, "weights");
  const int64_t* o = data_of<int64_t>(offsets, "offsets");
  CheckedQueries q{std::vector<int64_t>(t, t + terms.shape(0)),
                   std::vector<double>(w, w + weights.shape(0)),
                   std::vector<int64_t>(o, o + offsets.shape(0))};
  if (q.weights.size() != q.terms.size() || q.offsets.empty() || q.offsets[0] != 0)
    throw std::invalid_argument("terms, weights and offsets do not agree");
  for (size_t i = 0; i + 1 < q.offsets.size(); ++i)
    if (q.offsets[i + 1] < q.offsets[i] ||
        q.offsets[i + 1] > static_cast<int64_t>(q.terms.size()))
      throw std::invalid_argument("offsets out of range");
  return q;
}

// Runs a tokenizing call without the GIL, naming documents from first_doc.
template <class F>
auto tokenize_released(size_t first_doc, F&& run) {
  try {
    py::gil_scoped_release release;
    return run();
  } catch (const Utf8Error& e) {
    throw py::value_error(Utf8Error(first_doc + e.doc, e.offset).what());
  }
}

py::tuple batch_to_numpy(const TokenizedBatch& batch) {
  return py::make_tuple(to_numpy(batch.tokens), to_numpy(batch.offsets));
}

py::tuple vocabulary_tokenize(Vocabulary& self, const py::list& texts, int n_threads,
                              size_t first_doc) {
  const TextViews texts_utf8 = utf8_views(texts, first_doc);
  return batch_to_numpy(tokenize_released(
      first_doc, [&] { return self.tokenize(texts_utf8.views, n_threads); }));
}

py::tuple vocabulary_add_tokens(Vocabulary& self, const py::list& docs, size_t first_doc) {
  const TokenViews tokens = token_views(docs, first_doc);
  TokenizedBatch batch;
  {
    py::gil_scoped_release release;
    batch = self.add_tokens(tokens.views);
  }
  return batch_to_numpy(batch);
}

// words() and size() take the vocabulary's lock, which a tokenizing call holds without the
// GIL: they wait for it without the GIL too.
py::list vocabulary_words(const Vocabulary& self, size_t start) {
  std::vector<std::string> words;
  {
    py::gil_scoped_release release;
    words = self.words(start);
  }
  py::list out;
  for (const std::string& w : words) out.append(py::str(w));
  return out;
}

size_t vocabulary_size(const Vocabulary& self) {
  py::gil_scoped_release release;
  return self.size();
}

py::list tokenize_texts_py(const py::list& texts, int n_threads) {
  const TextViews texts_utf8 = utf8_views(texts, 0);
  const auto tokens =
      tokenize_released(0, [&] { return tokenize_texts(texts_utf8.views, n_threads); });
  py::list out;
  for (const auto& doc : tokens) {
    py::list words;
    for (const auto& w : doc) words.append(py::str(w));
    out.append(words);
  }
  return out;
}

Bm25Params make_params(double k1, double b, double delta, Variant variant, bool lucene_norms) {
  Bm25Params p;
  p.k1 = k1;
  p.b = b;
  p.delta = delta;
  p.variant = variant;
  p.lucene_norms = lucene_norms;
  check_params(p);
  return p;
}

template <class T>
std::vector<T> vector_from(const py::dict& arrays, const char* key) {
  const py::array a = arrays[key];
  const T* p = data_of<T>(a, key);
  return std::vector<T>(p, p + a.shape(0));
}

// Bm25Index's methods, one named function each (register_bm25 only binds them).

std::unique_ptr<Bm25Index> bm25_new(double k1, double b, double delta, Variant variant,
                                    bool lucene_norms) {
  return std::make_unique<Bm25Index>(make_params(k1, b, delta, variant, lucene_norms));
}

void bm25_add(Bm25Index& self, const py::array& words, const py::array& offsets,
              const py::array& word_to_term, const py::array& ids, int n_threads) {
  const auto* w = data_of<uint32_t>(words, "words");
  const auto* o = data_of<int64_t>(offsets, "offsets");
  const auto* map = data_of<int64_t>(word_to_term, "word_to_term");
  const auto* e = data_of<int64_t>(ids, "ids");
  const size_t n_docs = static_cast<size_t>(ids.shape(0));
  if (static_cast<size_t>(offsets.shape(0)) != n_docs + 1 ||
      (n_docs && static_cast<size_t>(o[n_docs]) != static_cast<size_t>(words.shape(0))))
    throw std::invalid_argument("offsets do not match words and ids");
  py::gil_scoped_release release;
  self.add(w, o, n_docs, map, static_cast<size_t>(word_to_term.shape(0)), e, n_threads);
}

void bm25_remove(Bm25Index& self, const py::array& ids, int n_threads) {
  const auto* e = data_of<int64_t>(ids, "ids");
  py::gil_scoped_release release;
  self.remove(e, static_cast<size_t>(ids.shape(0)), n_threads);
}

py::array_t<bool> bm25_has_ids(const Bm25Index& self, const py::array& ids) {
  const auto* e = data_of<int64_t>(ids, "ids");
  py::array_t<bool> out(ids.shape(0));
  auto* o = reinterpret_cast<uint8_t*>(out.mutable_data());
  {
    py::gil_scoped_release release;
    self.has_ids(e, static_cast<size_t>(ids.shape(0)), o);
  }
  return out;
}

py::array_t<float> bm25_get_scores(const Bm25Index& self, const py::array& terms,
                                   const py::array& weights) {
  const auto* t = data_of<int64_t>(terms, "terms");
  const auto* w = data_of<double>(weights, "weights");
  if (weights.shape(0) != terms.shape(0))
    throw std::invalid_argument("terms and weights differ in length");
  py::array_t<float> out(static_cast<py::ssize_t>(self.num_docs()));
  {
    py::gil_scoped_release release;
    self.get_scores(t, w, static_cast<size_t>(terms.shape(0)), out.mutable_data());
  }
  return out;
}

// The query terms' document frequencies, copied (parallel to the checked terms).
std::vector<int64_t> checked_doc_freqs(const py::array& doc_freqs, size_t n_terms) {
  const auto* f = data_of<int64_t>(doc_freqs, "doc_freqs");
  if (static_cast<size_t>(doc_freqs.shape(0)) != n_terms)
    throw std::invalid_argument("doc_freqs: one per query term expected");
  return std::vector<int64_t>(f, f + n_terms);
}

py::tuple bm25_search_with_statistics(const Bm25Index& self, const py::array& terms,
                                      const py::array& weights, const py::array& offsets,
                                      const py::array& doc_freqs, uint64_t n_docs,
                                      uint64_t total_length, size_t k, int n_threads,
                                      const std::optional<py::array>& allow, bool allow_by_row) {
  if (k == 0) throw std::invalid_argument("k must be >= 1");
  const AllowFilter filter = ragcore_bindings::allow_filter(allow, allow_by_row);
  const CheckedQueries queries = checked_queries(terms, weights, offsets);
  const std::vector<int64_t> dfs = checked_doc_freqs(doc_freqs, queries.terms.size());
  const QueryBatch q = queries.batch();
  check_result_size(q.nq, k, self.num_docs());
  py::array_t<float> scores({q.nq, k});
  py::array_t<int64_t> ids({q.nq, k});
  {
    py::gil_scoped_release release;
    self.search_with_statistics(q, {n_docs, total_length, dfs.data()}, k, n_threads,
                                scores.mutable_data(), ids.mutable_data(), filter);
  }
  return py::make_tuple(scores, ids);
}

py::array_t<float> bm25_get_scores_with_statistics(const Bm25Index& self, const py::array& terms,
                                                   const py::array& weights,
                                                   const py::array& doc_freqs, uint64_t n_docs,
                                                   uint64_t total_length) {
  const auto* t = data_of<int64_t>(terms, "terms");
  const auto* w = data_of<double>(weights, "weights");
  if (weights.shape(0) != terms.shape(0))
    throw std::invalid_argument("terms and weights differ in length");
  const size_t n = static_cast<size_t>(terms.shape(0));
  const std::vector<int64_t> dfs = checked_doc_freqs(doc_freqs, n);
  const std::vector<int64_t> term_copy(t, t + n);
  const std::vector<double> weight_copy(w, w + n);
  py::array_t<float> out(static_cast<py::ssize_t>(self.num_docs()));
  {
    py::gil_scoped_release release;
    self.get_scores_with_statistics(term_copy.data(), weight_copy.data(), n,
                                    {n_docs, total_length, dfs.data()}, out.mutable_data());
  }
  return out;
}

py::dict bm25_impacts(const Bm25Index& self, int n_threads) {
  Bm25Index::Impacts a;
  {
    py::gil_scoped_release release;
    a = self.impacts(n_threads);
  }
  py::dict out;
  out["offsets"] = to_numpy(a.offsets);
  out["docs"] = to_numpy(a.docs);
  out["values"] = to_numpy(a.values);
  out["slot_ids"] = to_numpy(a.slot_ids);
  return out;
}

py::tuple bm25_weigh_queries(const Bm25Index& self, const py::array& terms,
                             const py::array& weights, const py::array& offsets) {
  const CheckedQueries queries = checked_queries(terms, weights, offsets);
  const QueryBatch q = queries.batch();
  py::array_t<int64_t> out_terms(terms.shape(0));
  py::array_t<double> out_weights(terms.shape(0));
  py::array_t<double> out_base(static_cast<py::ssize_t>(q.nq));
  {
    py::gil_scoped_release release;
    self.weigh_queries(q, out_terms.mutable_data(), out_weights.mutable_data(),
                       out_base.mutable_data());
  }
  return py::make_tuple(out_terms, out_weights, out_base);
}

py::dict bm25_to_arrays(const Bm25Index& self) {
  const auto a = self.to_arrays();
  py::dict out;
  out["doc_ids"] = to_numpy(a.doc_ids);
  out["doc_lengths"] = to_numpy(a.doc_lengths);
  out["list_sizes"] = to_numpy(a.list_sizes);
  out["list_ends"] = to_numpy(a.list_ends);
  out["postings"] = to_numpy(a.postings);
  return out;
}

std::unique_ptr<Bm25Index> bm25_from_arrays(const py::dict& arrays, double k1, double b,
                                            double delta, Variant variant, bool lucene_norms) {
  Bm25Index::Arrays a;
  a.doc_ids = vector_from<int64_t>(arrays, "doc_ids");
  a.doc_lengths = vector_from<int64_t>(arrays, "doc_lengths");
  a.list_sizes = vector_from<int64_t>(arrays, "list_sizes");
  a.list_ends = vector_from<int64_t>(arrays, "list_ends");
  a.postings = vector_from<uint8_t>(arrays, "postings");
  const Bm25Params p = make_params(k1, b, delta, variant, lucene_norms);
  py::gil_scoped_release release;
  return Bm25Index::from_arrays(p, a);
}

}  // namespace

void register_bm25(py::module_& m) {
  py::enum_<Variant>(m, "Variant", "BM25 formula (cpp/include/ragcore/sparse/scoring.h).")
      .value("Lucene", Variant::Lucene)
      .value("LuceneLegacy", Variant::LuceneLegacy)
      .value("Okapi", Variant::Okapi)
      .value("Robertson", Variant::Robertson)
      .value("Atire", Variant::Atire)
      .value("Bm25L", Variant::Bm25L)
      .value("Bm25Plus", Variant::Bm25Plus);
  py::enum_<QueryAlgorithm>(m, "QueryAlgorithm", "How a BM25 search (QueryEncoder.search) finds the top k.")
      .value("Auto", QueryAlgorithm::Auto)
      .value("Exhaustive", QueryAlgorithm::Exhaustive)
      .value("MaxScore", QueryAlgorithm::MaxScore)
      .value("BlockMaxWand", QueryAlgorithm::BlockMaxWand)
      .value("BlockMaxPruning", QueryAlgorithm::BlockMaxPruning);

  py::class_<Vocabulary>(m, "Vocabulary")
      .def(py::init<>())
      .def("tokenize", &vocabulary_tokenize, py::arg("texts"), py::kw_only(),
           py::arg("n_threads") = 0, py::arg("first_doc") = 0,
           "Tokenizes texts, adding new words; returns (word ids uint32, offsets int64).")
      .def("add_tokens", &vocabulary_add_tokens, py::arg("docs"), py::kw_only(),
           py::arg("first_doc") = 0,
           "Word ids of pre-tokenized documents; returns (word ids uint32, offsets int64).")
      .def("words", &vocabulary_words, py::arg("start") = 0, "The words with ids >= start.")
      .def("__len__", &vocabulary_size);

  m.def("tokenize_texts", &tokenize_texts_py, py::arg("texts"), py::kw_only(),
        py::arg("n_threads") = 0, "Tokens of each text (the default rule), as lists of str.");

  py::class_<Bm25Index>(m, "Bm25Index")
      .def(py::init(&bm25_new), py::kw_only(), py::arg("k1"), py::arg("b"), py::arg("delta"),
           py::arg("variant"), py::arg("lucene_norms"))
      .def("add", &bm25_add, py::arg("words"), py::arg("offsets"), py::arg("word_to_term"),
           py::arg("ids"), py::kw_only(), py::arg("n_threads") = 0)
      .def("remove", &bm25_remove, py::arg("ids"), py::arg("n_threads") = 0)
      .def("has_ids", &bm25_has_ids, py::arg("ids"))
      .def("get_scores", &bm25_get_scores, py::arg("terms"), py::arg("weights"))
      .def("search_with_statistics", &bm25_search_with_statistics, py::arg("terms"),
           py::arg("weights"), py::arg("offsets"), py::arg("doc_freqs"), py::arg("n_docs"),
           py::arg("total_length"), py::arg("k"), py::kw_only(), py::arg("n_threads") = 0,
           py::arg("allow") = py::none(), py::arg("allow_by_row") = false,
           "Exhaustive top-k under given statistics (a term id of -1: a term this index "
           "lacks); returns (scores, ids).")
      .def("get_scores_with_statistics", &bm25_get_scores_with_statistics, py::arg("terms"),
           py::arg("weights"), py::arg("doc_freqs"), py::arg("n_docs"), py::arg("total_length"))
      .def("impacts", &bm25_impacts, py::arg("n_threads") = 0)
      .def("weigh_queries", &bm25_weigh_queries, py::arg("terms"), py::arg("weights"),
           py::arg("offsets"))
      .def_property_readonly("num_docs", &Bm25Index::num_docs)
      .def_property_readonly("total_length", &Bm25Index::total_length)
      .def_property_readonly("num_terms", &Bm25Index::num_terms)
      .def("live_ids", [](const Bm25Index& self) { return to_numpy(self.live_ids()); })
      .def("slot_ids", [](const Bm25Index& self) { return to_numpy(self.slot_ids()); })
      .def("doc_freqs", [](const Bm25Index& self) { return to_numpy(self.doc_freqs()); })
      .def("memory_bytes", &Bm25Index::memory_bytes)
      .def("postings_bytes", &Bm25Index::postings_bytes)
      .def("to_arrays", &bm25_to_arrays)
      .def_static("from_arrays", &bm25_from_arrays, py::arg("arrays"), py::kw_only(),
                  py::arg("k1"), py::arg("b"), py::arg("delta"), py::arg("variant"),
                  py::arg("lucene_norms"));
}
