// primkit_oracle_dump — evaluates op requests read from stdin with the oracle and prints the results.
//
// Request format (line based; any number of requests, each ended by a line `end`; `#` starts a comment):
//
//   op add                                   the op name
//   attr dims=0,1                            zero or more attributes, key=value (see build_attrs)
//   input f32 [2,3] 1 2 3 4 5 6              one line per input: dtype, shape, then the values
//   input f16 [2] hex 3c00 7e00              `hex`: raw bit patterns instead of decimal values
//   input f32 [2,2] strides=1,2 offset=0 1 2 3 4
//                                            optional strides (elements) and element offset; the values
//                                            are then the storage, not the row-major elements
//   end
//
// Decimal values are anything strtold reads (1.5, -0, inf, nan, 0x1p-3). Complex dtypes take two numbers
// (or two hex patterns) per element: real, then imaginary. Integer hex patterns are two's complement.
//
// For each request it prints `status OK` or `status <PK_STATUS> <message>`, then per output:
//   output <k> <dtype> [shape]
//   bits <hex pattern of each rounded element>        (complex: re:im)
//   rounded <each rounded element, %.17g>             (complex: re:im)
//   wide <each wide element, %.21Lg>                  (complex: re:im)
// and a line `end`.
//
// `primkit_oracle_dump --unimplemented` lists the ops of the table the oracle cannot evaluate, with reasons.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "primkit/op_info.hpp"
#include "primkit/oracle.hpp"

namespace {

using pk::oracle::HostTensor;
using pk::oracle::Wide;

const char *status_name(pk_status s) {
  switch (s) {
    case PK_OK:
      return "OK";
    case PK_UNIMPLEMENTED:
      return "PK_UNIMPLEMENTED";
    case PK_ERROR_INVALID_ARGUMENT:
      return "PK_ERROR_INVALID_ARGUMENT";
    case PK_ERROR_INTERNAL:
      return "PK_ERROR_INTERNAL";
    default:
      return "PK_ERROR";
  }
}

std::vector<int64_t> parse_list(std::string s) {
  if (!s.empty() && s.front() == '[') s = s.substr(1);
  if (!s.empty() && s.back() == ']') s.pop_back();
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(std::strtoll(item.c_str(), nullptr, 0));
  return out;
}

// Parses `dtype [shape] [strides=..] [offset=..] [hex] values...` into a tensor.
bool parse_input(std::istringstream &in, HostTensor &t, std::string &err) {
  std::string dtype_name, shape_text, tok;
  in >> dtype_name >> shape_text;
  t.dtype = pk::meta::dtype_id(dtype_name);
  if (t.dtype < 0) return err = "unknown dtype " + dtype_name, false;
  t.shape = parse_list(shape_text);
  int64_t elem_offset = 0;
  bool hex = false;
  std::vector<std::string> values;
  while (in >> tok) {
    if (tok.rfind("strides=", 0) == 0) {
      t.strides = parse_list(tok.substr(8));
    } else if (tok.rfind("offset=", 0) == 0) {
      elem_offset = std::strtoll(tok.c_str() + 7, nullptr, 0);
    } else if (tok == "hex") {
      hex = true;
    } else {
      values.push_back(tok);
    }
  }
  const bool cplx = pk::meta::is_complex(t.dtype);
  const size_t es = pk::meta::dtype_size(t.dtype);
  const size_t per = cplx ? 2 : 1;
  if (values.size() % per != 0) return err = "complex inputs need two values per element", false;
  const size_t count = values.size() / per;
  if (t.strides.empty() && static_cast<int64_t>(count) != t.numel())
    return err = "input has " + std::to_string(count) + " values, shape needs " + std::to_string(t.numel()), false;
  t.storage.assign(count * es, 0);
  t.byte_offset = static_cast<uint64_t>(elem_offset) * es;
  for (size_t i = 0; i < count; ++i) {
    uint8_t *dst = t.storage.data() + i * es;
    if (hex) {
      for (size_t p = 0; p < per; ++p) {
        uint64_t bits = std::strtoull(values[i * per + p].c_str(), nullptr, 16);
        std::memcpy(dst + p * (es / per), &bits, es / per);
      }
    } else {
      Wide w;
      w.re = std::strtold(values[i * per].c_str(), nullptr);
      if (cplx) w.im = std::strtold(values[i * per + 1].c_str(), nullptr);
      pk::oracle::store_rounded(w, t.dtype, dst);
    }
  }
  return true;
}

std::string shape_text(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t k = 0; k < shape.size(); ++k) s += (k ? "," : "") + std::to_string(shape[k]);
  return s + "]";
}

void print_output(size_t k, const pk::oracle::OutputValue &o) {
  const bool cplx = pk::meta::is_complex(o.dtype);
  const size_t es = pk::meta::dtype_size(o.dtype);
  const size_t part = cplx ? es / 2 : es;
  std::printf("output %zu %s %s\nbits", k, pk::meta::dtype_name(o.dtype), shape_text(o.shape).c_str());
  for (int64_t i = 0; i < o.numel(); ++i) {
    for (size_t p = 0; p < (cplx ? 2u : 1u); ++p) {
      uint64_t bits = 0;
      std::memcpy(&bits, o.rounded.data() + i * es + p * part, part);
      std::printf("%s%0*" PRIx64, p ? ":" : " ", static_cast<int>(part * 2), bits);
    }
  }
  std::printf("\nrounded");
  for (int64_t i = 0; i < o.numel(); ++i) {
    Wide w = o.rounded_at(i);
    if (cplx)
      std::printf(" %.17g:%.17g", static_cast<double>(w.re), static_cast<double>(w.im));
    else if (pk::meta::is_float(o.dtype))
      std::printf(" %.17g", static_cast<double>(w.re));
    else
      std::printf(" %" PRId64, static_cast<int64_t>(w.re));
  }
  std::printf("\nwide");
  for (int64_t i = 0; i < o.numel(); ++i) {
    const Wide &w = o.wide[static_cast<size_t>(i)];
    if (cplx)
      std::printf(" %.21Lg:%.21Lg", w.re, w.im);
    else
      std::printf(" %.21Lg", w.re);
  }
  std::printf("\n");
}

void run_request(const std::string &op_name, const std::vector<std::pair<std::string, std::string>> &attrs,
                 const std::vector<HostTensor> &inputs, const std::string &parse_error) {
  if (!parse_error.empty()) {
    std::printf("status PK_ERROR_INVALID_ARGUMENT %s\nend\n", parse_error.c_str());
    return;
  }
  const pk::meta::OpInfo *op = pk::meta::find_op(op_name);
  if (op == nullptr) {
    std::printf("status PK_ERROR_INVALID_ARGUMENT unknown op %s\nend\n", op_name.c_str());
    return;
  }
  std::vector<uint8_t> attr_bytes;
  pk::oracle::Result r = pk::oracle::build_attrs(op->id, attrs, attr_bytes);
  std::vector<pk::oracle::OutputValue> outputs;
  if (r.ok()) r = pk::oracle::evaluate(op->id, inputs, attr_bytes.empty() ? nullptr : attr_bytes.data(), outputs);
  if (!r.ok()) {
    std::printf("status %s %s\nend\n", status_name(r.status), r.message.c_str());
    return;
  }
  std::printf("status OK\n");
  for (size_t k = 0; k < outputs.size(); ++k) print_output(k, outputs[k]);
  std::printf("end\n");
}

}  // namespace

int main(int argc, char **argv) {
  if (argc > 1 && std::string(argv[1]) == "--unimplemented") {  // lists what the oracle cannot evaluate
    for (const auto &[op, why] : pk::oracle::unimplemented_ops()) std::printf("%s: %s\n", op.c_str(), why.c_str());
    return 0;
  }
  if (argc > 1) {
    std::fprintf(stderr, "usage: %s [--unimplemented] < requests\n", argv[0]);
    return 2;
  }
  std::string line, op_name, parse_error;
  std::vector<std::pair<std::string, std::string>> attrs;
  std::vector<HostTensor> inputs;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string word;
    if (!(in >> word) || word[0] == '#') continue;
    if (word == "op") {
      in >> op_name;
    } else if (word == "attr") {
      std::string kv;
      while (in >> kv) {
        size_t eq = kv.find('=');
        if (eq == std::string::npos) {
          parse_error = "attr needs key=value: " + kv;
          break;
        }
        attrs.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
      }
    } else if (word == "input") {
      HostTensor t;
      std::string err;
      if (!parse_input(in, t, err) && parse_error.empty()) parse_error = err;
      inputs.push_back(std::move(t));
    } else if (word == "end") {
      run_request(op_name, attrs, inputs, parse_error);
      std::fflush(stdout);
      op_name.clear();
      parse_error.clear();
      attrs.clear();
      inputs.clear();
    } else if (parse_error.empty()) {
      parse_error = "unknown request line: " + line;
    }
  }
  return 0;
}
