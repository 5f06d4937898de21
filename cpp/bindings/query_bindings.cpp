// Bindings of the BM25 query encoder (registered from module.cpp): conversion, GIL
// release and error translation. The stemmer is a Python callable (PyStemmer's
// stemWords), called with the GIL for the words the cache does not hold.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "ragcore/sparse/bm25_index.h"
#include "ragcore/sparse/query_encoder.h"
#include "ragcore/sparse/tokenize.h"
#include "ragcore/util/result_bound.h"
#include "array_checks.h"
#include "search_results.h"
#include "text_views.h"

namespace py = pybind11;
using namespace ragcore;
using namespace ragcore_bindings;

namespace {

// The native encoder and the Python stemmer it calls back.
struct PyQueryEncoder {
  PyQueryEncoder(const std::vector<std::string>& stopwords, py::object stem_words,
                 size_t cache_words, size_t cache_bytes)
      : stem_words(std::move(stem_words)),
        encoder(std::vector<std::string_view>(stopwords.begin(), stopwords.end()),
                !this->stem_words.is_none(), cache_words, cache_bytes) {}

  // The callback holds a borrowed handle: this object outlives every call.
  QueryEncoder::StemFn stem_fn() const {
    if (stem_words.is_none()) return {};
    const py::handle fn = stem_words;
    return [fn](const std::vector<std::string>& words) {
      py::gil_scoped_acquire gil;
      py::list in(words.size());
      for (size_t i = 0; i < words.size(); ++i) in[i] = py::str(words[i]);
      const py::object out = fn(in);
      std::vector<std::string> stems;
      stems.reserve(words.size());
      for (const py::handle s : out) {
        if (!PyUnicode_Check(s.ptr())) throw py::type_error("the stemmer must return str stems");
        stems.push_back(s.cast<std::string>());
      }
      return stems;
    };
  }

  py::object stem_words;
  QueryEncoder encoder;
};

// Encodes queries (a list of str / bytes, or of token lists when pretokenized) and
// passes them to then(const EncodedQueries&), all in one release of the GIL.
template <class Then>
void encode_then(const PyQueryEncoder& self, const py::list& queries, bool pretokenized,
                 Then&& then) {
  const QueryEncoder::StemFn stem = self.stem_fn();
  if (pretokenized) {
    const TokenViews tokens = token_views(queries, 0);
    py::gil_scoped_release release;
    then(self.encoder.encode_tokens(tokens.views, stem));
    return;
  }
  const TextViews texts = utf8_views(queries, 0);
  try {
    py::gil_scoped_release release;
    then(self.encoder.encode_texts(texts.views, stem));
  } catch (const Utf8Error& e) {
    throw py::value_error(e.what());
  }
}

// One query text, encoded for search: a short query without a stemmer into per-thread
// arrays (no allocation, no word map), others as encode_texts does. Without the GIL.
const EncodedQueries& encode_one(const PyQueryEncoder& self, std::string_view text,
                                 const QueryEncoder::StemFn& stem, EncodedQueries& long_query) {
  thread_local EncodedQueries short_query;  // at most kShortQueryTerms terms: stays small
  if (self.encoder.encode_short(text, short_query)) return short_query;
  long_query = self.encoder.encode_texts({text}, stem);
  return long_query;
}

// The UTF-8 bytes of a str, without a copy.
std::string_view utf8_of(PyObject* text) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text, &size);
  if (data == nullptr) {
    PyErr_Clear();
    throw py::value_error("document 0 cannot be encoded as UTF-8 (it holds a lone surrogate)");
  }
  return {data, static_cast<size_t>(size)};
}

// Where the QueryAlgorithm code of each of nq queries is written: algorithms_out (a
// writable C-contiguous uint8 array of nq elements), or nowhere when it is None.
uint8_t* algorithm_codes(const py::object& algorithms_out, size_t nq) {
  if (algorithms_out.is_none()) return nullptr;
  auto out = py::reinterpret_borrow<py::array>(algorithms_out);
  if (!py::isinstance<py::array_t<uint8_t>>(algorithms_out) ||
      !(out.flags() & py::array::c_style) || !out.writeable() ||
      static_cast<size_t>(out.size()) != nq)
    fail("algorithms_out", "expected a writable contiguous uint8 array of one element per query");
  return static_cast<uint8_t*>(out.mutable_data());
}

// BM25Index.search's one entry: encodes queries (one str, or a list of str / bytes, or of
// token lists when pretokenized) and searches the index, all in one release of the GIL;
// allow: a uint8 mask by id, or by slot when allow_by_row. Returns ragcore.Hits; the
// QueryAlgorithm value that ran for each query goes to algorithms_out when given. One str
// is what a RAG service sends once per question: it is read in place and encoded without
// a list around it.
py::object search(const PyQueryEncoder& self, const Bm25Index& index, const py::handle& queries,
                  bool pretokenized, size_t k, QueryAlgorithm algorithm, int n_threads,
                  const std::optional<py::array>& allow, bool allow_by_row,
                  const py::object& algorithms_out) {
  if (k == 0) throw std::invalid_argument("k must be >= 1");
  if (algorithm < QueryAlgorithm::Auto || algorithm > QueryAlgorithm::BlockMaxPruning)
    throw std::invalid_argument("algorithm: unknown value");
  const AllowFilter filter = allow_filter(allow, allow_by_row);
  const bool one = PyUnicode_Check(queries.ptr());
  if (!one && !py::isinstance<py::list>(queries))
    throw py::type_error("queries: expected a str or a list");
  const size_t nq = one ? 1 : py::reinterpret_borrow<py::list>(queries).size();
  // Only a k this large can fail the check: the count (a lock) is not asked otherwise.
  if (k > kMaxPaddedResultBytes / kResultEntryBytes / std::max<size_t>(nq, 1))
    check_result_size(nq, k, index.num_docs());
  uint8_t* codes = algorithm_codes(algorithms_out, nq);
  ResultArrays found{result_array<float>(nq, k), result_array<int64_t>(nq, k)};
  float* s = found.scores.mutable_data();
  int64_t* i = found.ids.mutable_data();
  const auto run = [&](const EncodedQueries& q) {
    const QueryBatch batch{q.terms.data(), q.weights.data(), q.offsets.data(),
                           q.offsets.size() - 1};
    index.search(batch, k, algorithm, n_threads, s, i, codes, filter);
  };
  if (!one) {
    encode_then(self, py::reinterpret_borrow<py::list>(queries), pretokenized, run);
    return make_hits(std::move(found));
  }
  const std::string_view text = utf8_of(queries.ptr());
  const QueryEncoder::StemFn stem = self.stem_fn();
  try {
    py::gil_scoped_release release;
    EncodedQueries long_query;
    run(encode_one(self, text, stem, long_query));
  } catch (const Utf8Error& e) {
    throw py::value_error(e.what());
  }
  return make_hits(std::move(found));
}

}  // namespace

void register_query_encoder(py::module_& m) {
  py::class_<PyQueryEncoder>(m, "QueryEncoder")
      .def(py::init<const std::vector<std::string>&, py::object, size_t, size_t>(),
           py::arg("stopwords"), py::kw_only(), py::arg("stem_words") = py::none(),
           py::arg("cache_words") = QueryEncoder::kDefaultCacheWords,
           py::arg("cache_bytes") = QueryEncoder::kDefaultCacheBytes,
           "stem_words: None or a callable list[str] -> list[str] (one stem per word).")
      .def("add_terms",
           [](PyQueryEncoder& self, const std::vector<std::string>& terms) {
             const std::vector<std::string_view> views(terms.begin(), terms.end());
             py::gil_scoped_release release;
             self.encoder.add_terms(views);
           },
           py::arg("terms"), "Appends index terms (ids continue from num_terms).")
      .def_property_readonly("num_terms",
                             [](const PyQueryEncoder& self) {
                               py::gil_scoped_release release;
                               return self.encoder.num_terms();
                             })
      .def("encode",
           [](const PyQueryEncoder& self, const py::list& queries, bool pretokenized) {
             EncodedQueries q;
             encode_then(self, queries, pretokenized, [&](EncodedQueries&& e) { q = std::move(e); });
             return py::make_tuple(to_numpy(q.terms), to_numpy(q.weights), to_numpy(q.offsets));
           },
           py::arg("queries"), py::kw_only(), py::arg("pretokenized") = false,
           "(term ids int64, multiplicities float64, offsets int64), each term once per query.")
      .def("search", &search, py::arg("index"), py::arg("queries"), py::arg("pretokenized"),
           py::arg("k"), py::arg("algorithm"), py::arg("n_threads"), py::arg("allow"),
           py::arg("allow_by_row"), py::arg("algorithms_out"),
           "Encodes queries (one str or a list) and searches index in one call; returns Hits, "
           "and the QueryAlgorithm value per query in algorithms_out (uint8) when given. "
           "Positional: the per-call path.")
      .def_property_readonly("cached_words",
                             [](const PyQueryEncoder& self) {
                               py::gil_scoped_release release;
                               return self.encoder.cached_words();
                             })
      .def_property_readonly("cache_bytes", [](const PyQueryEncoder& self) {
        py::gil_scoped_release release;
        return self.encoder.cache_bytes();
      });
}
