// example.cpp — parses the `example` text of an op-table row into input types and an attribute struct, so that
// tests and case generators start every op from a launch the table itself says is valid.
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string>

#include "primkit/op_info.hpp"

namespace pk::meta {

namespace {

std::string trim(const std::string &s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// Splits on `sep` outside brackets.
std::vector<std::string> split_top(const std::string &s, char sep) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == sep && depth == 0) {
      parts.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty()) parts.push_back(trim(cur));
  return parts;
}

bool parse_int(const std::string &s, int64_t &v) {
  if (s.empty()) return false;
  char *end = nullptr;
  long long x = std::strtoll(s.c_str(), &end, 10);
  if (*end != '\0') return false;
  v = x;
  return true;
}

bool parse_list(const std::string &s, std::vector<int64_t> &out) {
  if (s.size() < 2 || s.front() != '[' || s.back() != ']') return false;
  out.clear();
  for (const std::string &item : split_top(s.substr(1, s.size() - 2), ',')) {
    int64_t v;
    if (!parse_int(item, v)) return false;
    out.push_back(v);
  }
  return true;
}

bool parse_tensor(const std::string &s, TensorType &t) {
  size_t lb = s.find('[');
  if (lb == std::string::npos) return false;
  t.dtype = dtype_id(trim(s.substr(0, lb)));
  std::vector<int64_t> dims;
  if (t.dtype < 0 || !parse_list(s.substr(lb), dims) || dims.size() > PK_MAX_RANK) return false;
  t.ndim = static_cast<int32_t>(dims.size());
  for (int32_t d = 0; d < PK_MAX_RANK; ++d) t.shape[d] = d < t.ndim ? dims[d] : 0;
  return true;
}

template <class T>
void put(void *base, size_t off, T v) {
  std::memcpy(static_cast<unsigned char *>(base) + off, &v, sizeof v);
}

bool set_attr(const OpInfo &op, const AttrInfo &a, const std::string &value, void *out, Diag &d) {
  auto bad = [&](const char *what) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: example: attribute %s = '%s' is not %s", op.name, a.name,
                  value.c_str(), what);
  };
  switch (a.type) {
    case AttrType::i64: {
      int64_t v;
      if (!parse_int(value, v)) return bad("an integer");
      put<int64_t>(out, a.offset, v);
      return true;
    }
    case AttrType::f64: {
      char *end = nullptr;
      double v = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0') return bad("a number");
      put<double>(out, a.offset, v);
      return true;
    }
    case AttrType::boolean:
      if (value != "true" && value != "false") return bad("true or false");
      put<int32_t>(out, a.offset, value == "true" ? 1 : 0);
      return true;
    case AttrType::dtype: {
      int32_t id = dtype_id(value);
      if (id < 0) return bad("a dtype name");
      put<int32_t>(out, a.offset, id);
      return true;
    }
    case AttrType::enumeration:
      for (int32_t v = 0; v < a.enum_count; ++v) {
        if (value == enum_value_name(a.enum_id, v)) {
          put<int32_t>(out, a.offset, v);
          return true;
        }
      }
      return bad("a choice of its enum");
    case AttrType::ints: {
      std::vector<int64_t> list;
      if (!parse_list(value, list) || list.size() > PK_MAX_RANK) return bad("a list of at most 8 integers");
      put<int32_t>(out, a.count_offset, static_cast<int32_t>(list.size()));
      for (size_t i = 0; i < list.size(); ++i) put<int64_t>(out, a.offset + 8 * i, list[i]);
      return true;
    }
  }
  return bad("settable");
}

}  // namespace

bool parse_example(const OpInfo &op, const char *text, std::vector<TensorType> &inputs, void *attrs_out,
                   Diag &diag) {
  inputs.clear();
  std::memset(attrs_out, 0, kMaxAttrsSize);
  default_attrs(op, attrs_out);
  if (text == nullptr) text = "";
  uint32_t next_input = 0;
  for (const std::string &entry : split_top(text, ';')) {
    size_t colon = entry.find(':'), eq = entry.find('=');
    if (colon != std::string::npos && (eq == std::string::npos || colon < eq)) {
      std::string name = trim(entry.substr(0, colon));
      if (next_input >= op.num_inputs || name != op.inputs[next_input].name) {
        return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: example: input '%s' is not the next input (%s)", op.name,
                         name.c_str(), next_input < op.num_inputs ? op.inputs[next_input].name : "none left");
      }
      std::vector<std::string> types = split_top(entry.substr(colon + 1), ',');
      if (types.size() != 1 && !op.inputs[next_input].variadic) {
        return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: example: input %s takes one tensor", op.name,
                         name.c_str());
      }
      for (const std::string &t : types) {
        TensorType tt{};
        if (!parse_tensor(t, tt)) {
          return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: example: '%s' is not a tensor type like f32[2,3]",
                           op.name, t.c_str());
        }
        inputs.push_back(tt);
      }
      ++next_input;
    } else if (eq != std::string::npos) {
      std::string name = trim(entry.substr(0, eq)), value = trim(entry.substr(eq + 1));
      const AttrInfo *a = nullptr;
      for (uint32_t i = 0; i < op.num_attrs; ++i)
        if (name == op.attrs[i].name) a = &op.attrs[i];
      if (a == nullptr) {
        return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: example: no attribute named '%s'", op.name, name.c_str());
      }
      if (!set_attr(op, *a, value, attrs_out, diag)) return false;
    } else {
      return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: example: '%s' is neither 'input: type' nor 'attr=value'",
                       op.name, entry.c_str());
    }
  }
  if (next_input != op.num_inputs) {
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: example gives %u of %u inputs", op.name, next_input,
                     op.num_inputs);
  }
  return true;
}

}  // namespace pk::meta
