// Bindings of the BM25 query encoder (registered from module.cpp): conversion, GIL
// release and error translation. The stemmer is a Python callable (PyStemmer's
// stemWords), called with the GIL for the words the cache does not hold.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "ragcore/sparse/bm25_index.h"
#include "ragcore/sparse/query_encoder.h"
#include "ragcore/sparse/tokenize.h"
#include "ragcore/util/result_bound.h"
#include "array_checks.h"
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

// encode + Bm25Index::search in one native call: the single-query path of
// BM25Index.search, which would otherwise pay for three arrays and a second call.
py::tuple search(const PyQueryEncoder& self, const Bm25Index& index, const py::list& queries,
                 bool pretokenized, size_t k, QueryAlgorithm algorithm, int n_threads) {
  if (k == 0) throw std::invalid_argument("k must be >= 1");
  if (algorithm < QueryAlgorithm::Auto || algorithm > QueryAlgorithm::BlockMaxPruning)
    throw std::invalid_argument("algorithm: unknown value");
  check_result_size(queries.size(), k, index.num_docs());
  const auto nq = static_cast<py::ssize_t>(queries.size());
  py::array_t<float> scores({nq, static_cast<py::ssize_t>(k)});
  py::array_t<int64_t> ids({nq, static_cast<py::ssize_t>(k)});
  py::array_t<uint8_t> used(nq);
  float* s = scores.mutable_data();
  int64_t* i = ids.mutable_data();
  uint8_t* u = used.mutable_data();
  encode_then(self, queries, pretokenized, [&](const EncodedQueries& q) {
    const QueryBatch batch{q.terms.data(), q.weights.data(), q.offsets.data(),
                           q.offsets.size() - 1};
    index.search(batch, k, algorithm, n_threads, s, i, u);
  });
  return py::make_tuple(scores, ids, used);
}

// An instance of hits_type (ragcore.Hits, a frozen dataclass) holding the two arrays,
// without its constructor's checks (the arrays were just written by native code) or
// a Python frame: what Hits.of_native does, without the frame's cost per call.
// hits_type: a class (str_searcher checks it once).
py::object make_hits(PyObject* hits_type, py::object scores, py::object ids) {
  auto* type = reinterpret_cast<PyTypeObject*>(hits_type);
  const py::tuple no_args;
  py::object hits = py::reinterpret_steal<py::object>(
      PyBaseObject_Type.tp_new(type, no_args.ptr(), nullptr));
  if (!hits) throw py::error_already_set();
  // Interned once and kept for the process (no destructor after the interpreter's end).
  static PyObject* const scores_name = PyUnicode_InternFromString("scores");
  static PyObject* const ids_name = PyUnicode_InternFromString("ids");
  // object.__setattr__: past the frozen dataclass's __setattr__, as of_native does.
  if (PyObject_GenericSetAttr(hits.ptr(), scores_name, scores.ptr()) != 0 ||
      PyObject_GenericSetAttr(hits.ptr(), ids_name, ids.ptr()) != 0)
    throw py::error_already_set();
  return hits;
}

// A new C-contiguous [1, k] array of T, made by numpy's C API directly: pybind11's shape
// constructor builds shape and stride vectors, four heap allocations per one-str call.
template <class T>
py::array_t<T> one_row(size_t k) {
  auto& api = py::detail::npy_api::get();
  const Py_intptr_t dims[2] = {1, static_cast<Py_intptr_t>(k)};
  PyObject* descr = api.PyArray_DescrFromType_(py::detail::npy_format_descriptor<T>::value);
  if (descr == nullptr) throw py::error_already_set();
  // NewFromDescr takes the reference to descr, also when it fails.
  PyObject* array =
      api.PyArray_NewFromDescr_(api.PyArray_Type_, descr, 2, dims, nullptr, nullptr, 0, nullptr);
  if (array == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::array_t<T>>(array);
}

// One query text, auto algorithm: the per-call path of BM25Index.search(str, k). Returns
// hits_type's instance of (scores, ids) [1, k], and reads the str without a list around
// it: what a RAG service calls once per question, so every fixed cost here is paid per
// call. A short query without a stemmer is encoded into per-thread arrays (no
// allocation, no word map); others as encode_texts does.
py::object search_one(const PyQueryEncoder& self, const Bm25Index& index, PyObject* query,
                      size_t k, int n_threads, PyObject* hits_type) {
  // Only a k this large can fail the check: the count (a lock) is not asked otherwise.
  if (k > kMaxPaddedResultBytes / kResultEntryBytes) check_result_size(1, k, index.num_docs());
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(query, &size);
  if (data == nullptr) {
    PyErr_Clear();
    throw py::value_error("document 0 cannot be encoded as UTF-8 (it holds a lone surrogate)");
  }
  const std::string_view text(data, static_cast<size_t>(size));
  py::array_t<float> scores = one_row<float>(k);
  py::array_t<int64_t> ids = one_row<int64_t>(k);
  float* s = scores.mutable_data();
  int64_t* i = ids.mutable_data();
  const QueryEncoder::StemFn stem = self.stem_fn();
  try {
    py::gil_scoped_release release;
    thread_local EncodedQueries short_query;  // at most kShortQueryTerms terms: stays small
    EncodedQueries long_query;
    const EncodedQueries* q = &short_query;
    if (!self.encoder.encode_short(text, short_query)) {
      long_query = self.encoder.encode_texts({text}, stem);
      q = &long_query;
    }
    const QueryBatch batch{q->terms.data(), q->weights.data(), q->offsets.data(), 1};
    uint8_t used = 0;
    index.search(batch, k, QueryAlgorithm::Auto, n_threads, s, i, &used);
  } catch (const Utf8Error& e) {
    throw py::value_error(e.what());
  }
  return make_hits(hits_type, std::move(scores), std::move(ids));
}

// What the one-str entry calls: the encoder, the index and ragcore.Hits, held alive, and
// the native objects behind the first two (cast once, not per call).
struct StrSearcher {
  py::object encoder_obj, index_obj, hits_type;
  const PyQueryEncoder* encoder;
  const Bm25Index* index;
};

// The capsule is unnamed: PyCapsule_GetPointer then compares no name (a strcmp per call);
// only str_searcher makes these functions, so their self is always this capsule.
constexpr const char* kStrSearcherCapsule = nullptr;

// A plain int in [low, high] (not a bool, not an int subclass), or false.
bool plain_int(PyObject* obj, long long low, long long high, long long& out) {
  if (!PyLong_CheckExact(obj)) return false;
  int overflow = 0;
  out = PyLong_AsLongLongAndOverflow(obj, &overflow);
  return overflow == 0 && out >= low && out <= high;
}

// The most threads the Python checks keep (ragcore._util.arrays caps n_threads there).
constexpr long long kMaxThreads = 1 << 16;

// f(query, k, n_threads, algorithm, allow), called by BM25Index.search with every
// argument as the caller gave it: a vectorcall builtin (METH_FASTCALL), so neither
// pybind11's dispatch (argument casters, overload loop) nor Python-side type checks run
// per call. It answers the plain case only (query an exact str, k and n_threads plain
// ints, k >= 1, n_threads >= 0, algorithm "auto", allow None) and returns None for
// anything else, which the Python method then checks and explains.
PyObject* search_str_fastcall(PyObject* capsule, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 5) {
    PyErr_SetString(PyExc_TypeError, "expected (query, k, n_threads, algorithm, allow)");
    return nullptr;
  }
  static PyObject* const auto_name = PyUnicode_InternFromString("auto");
  PyObject* const query = args[0];
  PyObject* const algorithm = args[3];
  long long k = 0, n_threads = 0;
  if (!PyUnicode_CheckExact(query) || args[4] != Py_None ||
      !(algorithm == auto_name ||
        (PyUnicode_CheckExact(algorithm) && PyUnicode_Compare(algorithm, auto_name) == 0)) ||
      !plain_int(args[1], 1, PY_SSIZE_T_MAX, k) ||
      !plain_int(args[2], 0, kMaxThreads, n_threads))
    Py_RETURN_NONE;
  const auto* searcher =
      static_cast<const StrSearcher*>(PyCapsule_GetPointer(capsule, kStrSearcherCapsule));
  if (searcher == nullptr) return nullptr;
  try {
    return search_one(*searcher->encoder, *searcher->index, query, static_cast<size_t>(k),
                      static_cast<int>(n_threads), searcher->hits_type.ptr())
        .release()
        .ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (...) {
    py::detail::try_translate_exceptions();  // what pybind11's dispatch would raise
  }
  return nullptr;
}

PyMethodDef search_str_def = {
    "search_str", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&search_str_fastcall)),
    METH_FASTCALL,
    "search_str(query, k, n_threads, algorithm, allow): Hits of one str query, or None "
    "where the arguments are not the plain case (the caller then takes its checked path)."};

// The one-str entry bound to this encoder, index and Hits type.
py::object str_searcher(const py::object& encoder, const py::object& index,
                        const py::object& hits_type) {
  if (!PyType_Check(hits_type.ptr())) throw py::type_error("hits_type must be a class");
  auto owned = std::make_unique<StrSearcher>(StrSearcher{
      encoder, index, hits_type, &encoder.cast<const PyQueryEncoder&>(),
      &index.cast<const Bm25Index&>()});
  py::capsule holder(owned.get(), kStrSearcherCapsule, [](PyObject* capsule) {
    delete static_cast<StrSearcher*>(PyCapsule_GetPointer(capsule, kStrSearcherCapsule));
  });
  owned.release();
  PyObject* fn = PyCFunction_New(&search_str_def, holder.ptr());
  if (fn == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(fn);
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
           py::arg("k"), py::arg("algorithm"), py::arg("n_threads"),
           "encode + index.search in one call (positional arguments: the per-call path).")
      .def("str_searcher",
           [](const py::object& self, const py::object& index, const py::object& hits_type) {
             return str_searcher(self, index, hits_type);
           },
           py::arg("index"), py::arg("hits_type"),
           "The one-str entry of BM25Index.search bound to this encoder and index: "
           "f(query, k, n_threads, algorithm, allow) -> hits_type's instance, or None "
           "where the arguments are not the plain case.")
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
