// Views of Python texts and token lists as UTF-8, shared by the binding sources
// that tokenize (sparse_bindings.cpp, query_bindings.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <string_view>
#include <vector>

namespace ragcore_bindings {

namespace py = pybind11;

// UTF-8 views into Python str / bytes objects, and a reference to each: the views are read
// with the GIL released, when another thread may change the caller's lists.
struct TextViews {
  std::vector<std::string_view> views;
  std::vector<py::object> owners;
};

struct TokenViews {
  std::vector<std::vector<std::string_view>> views;
  std::vector<py::object> owners;
};

// The documents (str or bytes); errors name documents as first_doc + position in the list.
inline TextViews utf8_views(const py::list& texts, size_t first_doc) {
  TextViews out;
  auto& views = out.views;
  views.reserve(texts.size());
  out.owners.reserve(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    PyObject* obj = texts[i].ptr();
    if (PyUnicode_Check(obj)) {
      Py_ssize_t size = 0;
      const char* data = PyUnicode_AsUTF8AndSize(obj, &size);
      if (data == nullptr) {
        PyErr_Clear();
        throw py::value_error("document " + std::to_string(first_doc + i) +
                              " cannot be encoded as UTF-8 (it holds a lone surrogate)");
      }
      views.emplace_back(data, static_cast<size_t>(size));
    } else if (PyBytes_Check(obj)) {
      views.emplace_back(PyBytes_AS_STRING(obj), static_cast<size_t>(PyBytes_GET_SIZE(obj)));
    } else {
      throw py::type_error("document " + std::to_string(first_doc + i) +
                           " must be str or bytes, got " +
                           std::string(Py_TYPE(obj)->tp_name));
    }
    out.owners.push_back(py::reinterpret_borrow<py::object>(obj));
  }
  return out;
}

// Pre-tokenized documents (lists of str tokens).
inline TokenViews token_views(const py::list& docs, size_t first_doc) {
  TokenViews out;
  auto& views = out.views;
  views.resize(docs.size());
  for (size_t d = 0; d < docs.size(); ++d) {
    const py::handle doc = docs[d];
    if (!py::isinstance<py::list>(doc) && !py::isinstance<py::tuple>(doc))
      throw py::type_error("document " + std::to_string(first_doc + d) +
                           ": expected a list of str tokens");
    for (const py::handle tok : doc) {
      if (!PyUnicode_Check(tok.ptr()))
        throw py::type_error("document " + std::to_string(first_doc + d) +
                             ": tokens must be str, got " +
                             std::string(Py_TYPE(tok.ptr())->tp_name));
      Py_ssize_t size = 0;
      const char* data = PyUnicode_AsUTF8AndSize(tok.ptr(), &size);
      if (data == nullptr) {
        PyErr_Clear();
        throw py::value_error("document " + std::to_string(first_doc + d) +
                              ": a token is not valid UTF-8 (a lone surrogate)");
      }
      if (size == 0)  // the default rule never makes one, and it could never match a query
        throw py::value_error("document " + std::to_string(first_doc + d) +
                              ": a token is the empty string");
      views[d].emplace_back(data, static_cast<size_t>(size));
      out.owners.push_back(py::reinterpret_borrow<py::object>(tok));
    }
  }
  return out;
}

}  // namespace ragcore_bindings
