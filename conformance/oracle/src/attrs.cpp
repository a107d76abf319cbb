// attrs.cpp — builds an op's attribute struct from key=value text (for the dump tool and tests).
#include <cstdlib>
#include <cstring>

#include "oracle_internal.hpp"

namespace pk::oracle {
namespace {

template <typename T>
void write_at(std::vector<uint8_t> &bytes, size_t offset, T v) {
  std::memcpy(bytes.data() + offset, &v, sizeof v);
}

bool parse_i64(const std::string &s, int64_t &out) {
  char *end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 0);
  if (end == s.c_str() || *end != '\0') return false;
  out = v;
  return true;
}

bool parse_f64(const std::string &s, double &out) {
  char *end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end != s.c_str() && *end == '\0';
}

}  // namespace

Result build_attrs(uint32_t op_id, const std::vector<std::pair<std::string, std::string>> &kv,
                   std::vector<uint8_t> &out) {
  const meta::OpInfo *op = meta::find_op(op_id);
  if (op == nullptr) return {PK_ERROR_INVALID_ARGUMENT, "unknown op id " + std::to_string(op_id)};
  out.clear();
  if (op->num_attrs == 0) {
    if (!kv.empty()) return {PK_ERROR_INVALID_ARGUMENT, std::string(op->name) + " has no attributes"};
    return {};
  }
  // Start from the table's defaults: normalizing a struct that only has struct_size (an "oldest caller")
  // fills every field with its default (0 / empty for attributes without one).
  std::vector<uint8_t> bytes(meta::kMaxAttrsSize, 0);
  {
    const uint32_t only_size = sizeof(uint32_t);
    meta::Diag diag;
    if (!meta::normalize_attrs(*op, &only_size, bytes.data(), diag)) return {diag.status, diag.message};
    bytes.resize(op->attrs_size);
  }
  for (const auto &[key, value] : kv) {
    const meta::AttrInfo *a = nullptr;
    for (uint32_t k = 0; k < op->num_attrs; ++k)
      if (key == op->attrs[k].name) a = &op->attrs[k];
    if (a == nullptr) return {PK_ERROR_INVALID_ARGUMENT, std::string(op->name) + " has no attribute " + key};
    const std::string bad = std::string(op->name) + ": bad value '" + value + "' for attribute " + key;
    switch (a->type) {
      case meta::AttrType::i64: {
        int64_t v;
        if (!parse_i64(value, v)) return {PK_ERROR_INVALID_ARGUMENT, bad};
        write_at<int64_t>(bytes, a->offset, v);
        break;
      }
      case meta::AttrType::f64: {
        double v;
        if (!parse_f64(value, v)) return {PK_ERROR_INVALID_ARGUMENT, bad};
        write_at<double>(bytes, a->offset, v);
        break;
      }
      case meta::AttrType::boolean: {
        int32_t v = value == "true" || value == "1" ? 1 : (value == "false" || value == "0" ? 0 : -1);
        if (v < 0) return {PK_ERROR_INVALID_ARGUMENT, bad};
        write_at<int32_t>(bytes, a->offset, v);
        break;
      }
      case meta::AttrType::dtype: {
        int32_t d = meta::dtype_id(value);
        if (d < 0) return {PK_ERROR_INVALID_ARGUMENT, bad};
        write_at<int32_t>(bytes, a->offset, d);
        break;
      }
      case meta::AttrType::enumeration: {
        int32_t found = -1;
        for (int32_t k = 0; k < a->enum_count; ++k)
          if (value == meta::enum_value_name(a->enum_id, k)) found = k;
        int64_t num;
        if (found < 0 && parse_i64(value, num)) found = static_cast<int32_t>(num);
        if (found < 0) return {PK_ERROR_INVALID_ARGUMENT, bad};
        write_at<int32_t>(bytes, a->offset, found);
        break;
      }
      case meta::AttrType::ints: {
        std::string list = value;
        if (!list.empty() && list.front() == '[') list = list.substr(1);
        if (!list.empty() && list.back() == ']') list.pop_back();
        std::vector<int64_t> vals;
        size_t pos = 0;
        while (pos < list.size()) {
          size_t comma = list.find(',', pos);
          std::string item = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
          int64_t v;
          if (!parse_i64(item, v)) return {PK_ERROR_INVALID_ARGUMENT, bad};
          vals.push_back(v);
          if (comma == std::string::npos) break;
          pos = comma + 1;
        }
        if (vals.size() > PK_MAX_RANK) return {PK_ERROR_INVALID_ARGUMENT, bad + " (more than PK_MAX_RANK values)"};
        write_at<int32_t>(bytes, a->count_offset, static_cast<int32_t>(vals.size()));
        for (size_t k = 0; k < vals.size(); ++k) write_at<int64_t>(bytes, a->offset + 8 * k, vals[k]);
        break;
      }
    }
  }
  out.assign(meta::kMaxAttrsSize, 0);
  meta::Diag diag;
  if (!meta::normalize_attrs(*op, bytes.data(), out.data(), diag)) return {diag.status, diag.message};
  out.resize(op->attrs_size);
  return {};
}

}  // namespace pk::oracle
