// cases.cpp — conformance cases generated from the op table, never listed per op.
//
// For each (op, dtype) the generator picks a family from the row's shape rule and inputs:
//   elementwise   (elementwise rule, or same_as_input without axis attributes and without an example): every
//                 input of one shape — 0-d, empty, size 1, vector-tail sizes 23 and 1029, 2-D, and one larger
//                 size in the full profile;
//   reduce/scan   input shapes with each axis subset (reduce) or each axis (scan);
//   example       ops with a custom or derived shape start from the row's `example` (valid by construction),
//                 with their axis attributes moved to every axis, enum/bool attributes through every choice and
//                 numeric attributes through a few values;
//   creation      ops without inputs: the example's attributes with the dtype, shape, value and seed varied.
// Then, on every family: layouts (transposed, strided with gaps, byte offset, reversed, zero-stride
// broadcast: the same logical shape, so every op admits them), edge values (NaN, ±inf, ±0, subnormals,
// integer min/max) mixed into seeded random data, and in the full profile an exhaustive sweep of every bit
// pattern for one-input elementwise ops in f16/bf16 (fp8 in both profiles: 256 values cost nothing).
// Each candidate is validated with the op table's own rules (pk::meta); invalid ones are dropped. Ids are
// "<op>.<dtype>.<variant>.<k>"; the values come from a generator seeded by (seed, op, dtype, variant, k), so one
// case can be regenerated alone from its id.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <random>

#include "conformance_internal.hpp"

namespace pk::conformance {

namespace {

using meta::AttrInfo;
using meta::AttrType;
using meta::OpInfo;
using meta::TensorType;
using oracle::HostTensor;
using oracle::Wide;

enum class Layout { contiguous, transposed, strided, offset, reversed, broadcast };

const char *layout_name(Layout l) {
  switch (l) {
    case Layout::contiguous:
      return "contiguous";
    case Layout::transposed:
      return "transposed";
    case Layout::strided:
      return "strided";
    case Layout::offset:
      return "offset";
    case Layout::reversed:
      return "reversed";
    case Layout::broadcast:
      return "broadcast";
  }
  return "?";
}

// mixed: seeded random values with edge values mixed in; positive: the same, > 0; exhaustive: element i holds
// bit pattern i; sweep: every 7th bit pattern (a quick-profile subset that still reaches every binade of a 16-bit
// format); binades: for a 32/64-bit float, a few mantissas in every binade of both signs, subnormals, ±inf, NaN;
// edges: every edge value of the dtype, and for k inputs their k-fold cross product (every ±0 pair, NaN against
// every number, integers at the rounding edges of every float format); long_row: finite, positive values in
// [0.25, 0.75) with no edge values, for long reductions (a too-narrow accumulator stagnates and fails the bound);
// ties: values from a handful of small numbers, -0 and +0 among them, so that equal keys and ±0 pairs abound;
// patterns: the bit patterns the spec lists (the thresholds family); tiny: for float and complex dtypes, values at
// the bottom of the format (mostly subnormals, some of the smallest normals, ±0, and ±1 and ±1/2 so that products
// and quotients stay there), so that subnormal inputs meet every op and many results are subnormal; integer
// inputs get mixed values.
enum class Values { mixed, positive, exhaustive, sweep, binades, edges, long_row, ties, patterns, tiny };

uint64_t mix(uint64_t h, uint64_t v) {
  // splitmix64 step: a cheap, well-spread hash for seeding.
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h += 0x9e3779b97f4a7c15ull;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}
uint64_t mix(uint64_t h, const std::string &s) {
  for (unsigned char c : s) h = mix(h, c);
  return h;
}

int64_t numel_of(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

template <class T>
void put(std::vector<uint8_t> &attrs, size_t off, T v) {
  std::memcpy(attrs.data() + off, &v, sizeof v);
}
template <class T>
T get(const std::vector<uint8_t> &attrs, size_t off) {
  T v;
  std::memcpy(&v, attrs.data() + off, sizeof v);
  return v;
}

// One candidate before values are drawn.
struct Spec {
  std::vector<int32_t> dtypes;               // per input tensor
  std::vector<std::vector<int64_t>> shapes;  // per input tensor
  std::vector<uint8_t> attrs;                // normalized struct (empty if the op has none)
  Layout layout = Layout::contiguous;
  int layout_input = -1;  // -1: every input gets the layout; else only this one
  Values values = Values::mixed;
  std::vector<std::vector<uint64_t>> patterns;  // Values::patterns: input i's bit patterns, element by element
};

// --- values ---------------------------------------------------------------------------------------------------

// Every edge value of a float format: NaN, ±inf, ±0, the smallest subnormal, the largest subnormal, the smallest
// normal, the largest finite value, and ±1, 1/2.
std::vector<long double> float_edges(int32_t dtype) {
  oracle::BinaryFormat f = oracle::format_of(meta::real_of(dtype));
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const long double min_normal = std::ldexp(1.0L, 1 - bias);
  const long double min_sub = std::ldexp(1.0L, 1 - bias - f.man_bits);
  const int emax = f.ieee ? bias : (1 << f.exp_bits) - 1 - bias;
  long double max_finite = std::ldexp(2.0L - std::ldexp(1.0L, -f.man_bits), emax);
  if (!f.ieee) max_finite = std::ldexp(2.0L - std::ldexp(1.0L, 1 - f.man_bits), emax);  // e4m3fn: 448
  const long double inf = std::numeric_limits<long double>::infinity();
  const long double edges[] = {std::numeric_limits<long double>::quiet_NaN(),
                               inf,
                               -inf,
                               0.0L,
                               -0.0L,
                               min_sub,
                               -min_sub,
                               min_normal - min_sub,
                               min_normal,
                               max_finite,
                               -max_finite,
                               1.0L,
                               -1.0L,
                               0.5L};
  return {std::begin(edges), std::end(edges)};
}

long double float_edge(int32_t dtype, std::mt19937_64 &rng) {
  const std::vector<long double> edges = float_edges(dtype);
  return edges[rng() % edges.size()];
}

// Integer edges: the extremes and their neighbours, 0, ±1, and for every float format with m explicit mantissa
// bits (bf16 7, f16 10, f32 23, f64 52) the value 2^k + 2^(k-m-1) + 1 (and its negative) at the largest k the
// integer holds: exactly above a rounding tie of that format, so a conversion that rounds twice (through a wider
// float first, which drops the + 1 and lands on the tie) rounds the wrong way.
std::vector<long double> int_edges(int32_t dtype) {
  const int bits = static_cast<int>(meta::dtype_size(dtype) * 8);
  const bool sign = meta::is_signed(dtype);
  long double lo = sign ? -std::ldexp(1.0L, bits - 1) : 0;
  long double hi = sign ? std::ldexp(1.0L, bits - 1) - 1 : std::ldexp(1.0L, bits) - 1;
  std::vector<long double> edges = {lo, hi, 0, 1, sign ? -1.0L : 2.0L, lo + 1, hi - 1};
  const int k = bits - (sign ? 2 : 1);
  for (int m : {7, 10, 23, 52}) {
    if (k - m - 1 < 1) continue;
    const long double v = std::ldexp(1.0L, k) + std::ldexp(1.0L, k - m - 1) + 1;
    edges.push_back(v);
    if (sign) edges.push_back(-v);
  }
  return edges;
}

long double int_edge(int32_t dtype, std::mt19937_64 &rng) {
  const std::vector<long double> edges = int_edges(dtype);
  return edges[rng() % edges.size()];
}

std::vector<long double> edges_of(int32_t dtype) {
  const int32_t real = meta::real_of(dtype);
  if (real == PK_DTYPE_BOOL) return {0, 1};
  return meta::is_integer(real) ? int_edges(real) : float_edges(real);
}

long double random_real(int32_t dtype, Values kind, bool edges_allowed, std::mt19937_64 &rng) {
  const int32_t real = meta::real_of(dtype);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  if (real == PK_DTYPE_BOOL) return rng() & 1;
  if (meta::is_integer(real)) {
    if (edges_allowed && rng() % 8 == 0) return int_edge(real, rng);
    int64_t lo = meta::is_signed(real) && kind != Values::positive ? -100 : 0;
    return static_cast<long double>(lo + static_cast<int64_t>(rng() % 201));
  }
  if (edges_allowed && rng() % 8 == 0) {
    long double e = float_edge(real, rng);
    if (kind != Values::positive || !(e < 0)) return e;
  }
  // Log-uniform magnitudes over [2^-6, 2^6), a random sign (positive only when asked); one in eight draws is
  // a small integer or half-integer, where rounding ties and exact results live.
  long double v;
  if (rng() % 8 == 0) {
    v = static_cast<long double>(static_cast<int>(rng() % 17)) / 2.0L;
  } else {
    v = std::ldexp(1.0L + static_cast<long double>(unit(rng)), static_cast<int>(rng() % 12) - 6);
  }
  if (kind != Values::positive && (rng() & 1)) v = -v;
  return v;
}

// Bit patterns of a 32- or 64-bit float: per binade (biased exponent 0 .. max, both signs) the mantissas 0, 1,
// the largest, and `per_binade` random ones; then ±inf and NaN. Sorted, so a case's elements run through the
// formats's range in order.
std::vector<uint64_t> binade_patterns(int32_t dtype, int per_binade, std::mt19937_64 &rng) {
  const oracle::BinaryFormat f = oracle::format_of(dtype);
  const uint64_t man_mask = (uint64_t{1} << f.man_bits) - 1;
  const uint64_t max_exp = (uint64_t{1} << f.exp_bits) - 1;
  std::vector<uint64_t> out;
  for (uint64_t sign = 0; sign < 2; ++sign)
    for (uint64_t e = 0; e < max_exp; ++e) {
      const uint64_t head = (sign << (f.exp_bits + f.man_bits)) | (e << f.man_bits);
      out.push_back(head);
      out.push_back(head | 1);
      out.push_back(head | man_mask);
      for (int k = 0; k < per_binade; ++k) out.push_back(head | (rng() & man_mask));
    }
  for (uint64_t sign = 0; sign < 2; ++sign) {
    const uint64_t inf = (sign << (f.exp_bits + f.man_bits)) | (max_exp << f.man_bits);
    out.push_back(inf);
    out.push_back(inf | (uint64_t{1} << (f.man_bits - 1)));
  }
  return out;
}

int64_t binade_count(int32_t dtype, int per_binade) {
  const oracle::BinaryFormat f = oracle::format_of(dtype);
  return 2 * ((int64_t{1} << f.exp_bits) - 1) * (3 + per_binade) + 4;
}

// `count` logical values of dtype as bytes (row-major). Edges: element i holds edge (i / period) mod E, so inputs
// given periods 1, E0, E0*E1, ... hold the cross product of their edges.
std::vector<uint8_t> draw_values(int32_t dtype, int64_t count, Values kind, std::mt19937_64 &rng, int64_t period = 1) {
  const size_t size = meta::dtype_size(dtype);
  std::vector<uint8_t> bytes(static_cast<size_t>(count) * size);
  if (kind == Values::exhaustive || kind == Values::sweep || kind == Values::binades) {
    std::vector<uint64_t> patterns;
    if (kind == Values::binades) {
      const int64_t per_sign = 2 * ((int64_t{1} << oracle::format_of(dtype).exp_bits) - 1);
      patterns = binade_patterns(dtype, static_cast<int>(std::max<int64_t>((count - 4) / per_sign - 3, 0)), rng);
    }
    for (int64_t i = 0; i < count; ++i) {
      uint64_t bits = static_cast<uint64_t>(i) * (kind == Values::sweep ? 7 : 1);
      if (kind == Values::binades) bits = patterns[static_cast<size_t>(i) % patterns.size()];
      std::memcpy(bytes.data() + static_cast<size_t>(i) * size, &bits, size);
    }
    return bytes;
  }
  if (kind == Values::edges) {
    const std::vector<long double> e = edges_of(dtype);
    for (int64_t i = 0; i < count; ++i) {
      Wide w;
      w.re = e[static_cast<size_t>((i / period) % static_cast<int64_t>(e.size()))];
      oracle::store_rounded(w, dtype, bytes.data() + static_cast<size_t>(i) * size, oracle::Overflow::standard);
    }
    return bytes;
  }
  if (kind == Values::long_row || kind == Values::ties) {
    std::uniform_real_distribution<double> unit(0.25, 0.75);
    const bool is_int = !meta::is_float(meta::real_of(dtype)) && !meta::is_complex(dtype);
    for (int64_t i = 0; i < count; ++i) {
      Wide w;
      if (kind == Values::long_row) {
        w.re = is_int ? static_cast<long double>(rng() % 4) : static_cast<long double>(unit(rng));
      } else {
        static const long double ties[] = {-1.0L, -0.0L, 0.0L, 1.0L, 2.0L};
        w.re = ties[rng() % 5];
        if (is_int && !(w.re >= 0)) w.re = meta::is_signed(meta::real_of(dtype)) ? -1.0L : 0.0L;
      }
      if (meta::is_complex(dtype)) w.im = kind == Values::long_row ? static_cast<long double>(unit(rng)) : 0.0L;
      oracle::store_rounded(w, dtype, bytes.data() + static_cast<size_t>(i) * size, oracle::Overflow::standard);
    }
    return bytes;
  }
  if (kind == Values::tiny && (meta::is_float(meta::real_of(dtype)) || meta::is_complex(dtype))) {
    const oracle::BinaryFormat f = oracle::format_of(meta::real_of(dtype));
    const int bias = (1 << (f.exp_bits - 1)) - 1;
    auto tiny = [&]() {
      const uint64_t pick = rng() % 16;
      long double v;
      if (pick < 10) {  // a subnormal: mantissa field 1 .. 2^m - 1, exponent field 0
        const uint64_t m = 1 + rng() % ((uint64_t{1} << f.man_bits) - 1);
        v = std::ldexp(static_cast<long double>(m), 1 - bias - f.man_bits);
      } else if (pick < 12) {  // one of the two smallest binades of normals
        const uint64_t m = rng() % (uint64_t{1} << f.man_bits);
        v = std::ldexp(1.0L + std::ldexp(static_cast<long double>(m), -f.man_bits),
                       1 - bias + static_cast<int>(pick & 1));
      } else if (pick < 14) {
        v = pick == 12 ? 1.0L : 0.5L;
      } else {
        v = 0.0L;
      }
      return (rng() & 1) ? -v : v;
    };
    for (int64_t i = 0; i < count; ++i) {
      Wide w;
      w.re = tiny();
      if (meta::is_complex(dtype)) w.im = tiny();
      oracle::store_rounded(w, dtype, bytes.data() + static_cast<size_t>(i) * size, oracle::Overflow::standard);
    }
    return bytes;
  }
  const bool edges = count >= 4;
  for (int64_t i = 0; i < count; ++i) {
    Wide w;
    w.re = random_real(dtype, kind, edges, rng);
    if (meta::is_complex(dtype)) w.im = random_real(dtype, kind, edges, rng);
    oracle::store_rounded(w, dtype, bytes.data() + static_cast<size_t>(i) * size, oracle::Overflow::standard);
  }
  return bytes;
}

void fill_range(int32_t dtype, std::vector<uint8_t> &bytes, int64_t lo, int64_t hi, std::mt19937_64 &rng) {
  const size_t size = meta::dtype_size(dtype);
  const int64_t count = static_cast<int64_t>(bytes.size() / size);
  for (int64_t i = 0; i < count; ++i) {
    Wide w;
    w.re = static_cast<long double>(lo +
                                    static_cast<int64_t>(rng() % static_cast<uint64_t>(std::max<int64_t>(hi - lo, 1))));
    oracle::store_rounded(w, dtype, bytes.data() + static_cast<size_t>(i) * size, oracle::Overflow::standard);
  }
}

void sort_ascending(int32_t dtype, std::vector<uint8_t> &bytes) {
  const size_t size = meta::dtype_size(dtype);
  const size_t count = bytes.size() / size;
  std::vector<long double> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = oracle::load_element(bytes.data() + i * size, dtype).re;
  std::stable_sort(v.begin(), v.end(), [](long double a, long double b) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
    return a < b;
  });
  for (size_t i = 0; i < count; ++i) {
    Wide w;
    w.re = v[i];
    oracle::store_rounded(w, dtype, bytes.data() + i * size, oracle::Overflow::standard);
  }
}

// --- layouts --------------------------------------------------------------------------------------------------

// A view of `shape` holding `logical` (row-major values) in storage laid out as `layout` says. Bytes outside
// the view are 0xff (NaN in every float format), so a kernel reading past its view produces visible garbage.
HostTensor make_view(int32_t dtype, const std::vector<int64_t> &shape, const std::vector<uint8_t> &logical,
                     Layout layout) {
  const size_t size = meta::dtype_size(dtype);
  const size_t rank = shape.size();
  if (layout == Layout::contiguous) return HostTensor::contiguous(dtype, shape, logical);
  std::vector<int64_t> strides(rank, 1);
  int broadcast_dim = -1;
  if (layout == Layout::broadcast) {
    for (size_t k = 0; k < rank; ++k)
      if (shape[k] > 1) {
        broadcast_dim = static_cast<int>(k);
        break;
      }
  }
  if (layout == Layout::transposed && rank >= 2) {
    int64_t s = 1;
    for (size_t k = 0; k < rank; ++k) {
      strides[k] = s;
      s *= std::max<int64_t>(shape[k], 1);
    }
  } else {
    int64_t s = (layout == Layout::strided || (layout == Layout::transposed && rank < 2)) ? 2 : 1;
    for (size_t k = rank; k-- > 0;) {
      strides[k] = s;
      if (static_cast<int>(k) != broadcast_dim) s *= std::max<int64_t>(shape[k], 1);
    }
    if (broadcast_dim >= 0) strides[static_cast<size_t>(broadcast_dim)] = 0;
    if (layout == Layout::reversed && rank > 0) strides[rank - 1] = -strides[rank - 1];
  }
  const int64_t count = numel_of(shape);
  int64_t min_off = 0, max_off = 0;
  if (count > 0) {
    for (size_t k = 0; k < rank; ++k) {
      int64_t span = (shape[k] - 1) * strides[k];
      if (span < 0)
        min_off += span;
      else
        max_off += span;
    }
  }
  const int64_t pad_front = layout == Layout::offset ? 3 : 1, pad_back = 2;
  const int64_t elements = pad_front + (count > 0 ? max_off - min_off + 1 : 0) + pad_back;
  HostTensor t;
  t.dtype = dtype;
  t.shape = shape;
  t.strides = strides;
  t.storage.assign(static_cast<size_t>(elements) * size, 0xff);
  const int64_t base = pad_front - min_off;
  t.byte_offset = static_cast<uint64_t>(base) * size;
  if (layout == Layout::offset) t.strides.clear();  // row-major with a byte offset: strides NULL
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t phys = base, src = 0, src_stride = 1;
    for (size_t k = rank; k-- > 0;) {
      phys += idx[k] * strides[k];
      int64_t ik = static_cast<int>(k) == broadcast_dim ? 0 : idx[k];
      src += ik * src_stride;
      src_stride *= shape[k];
    }
    std::memcpy(t.storage.data() + static_cast<size_t>(phys) * size, logical.data() + static_cast<size_t>(src) * size,
                size);
    for (size_t k = rank; k-- > 0;) {
      if (++idx[k] < shape[k]) break;
      idx[k] = 0;
    }
  }
  return t;
}

// --- the generator --------------------------------------------------------------------------------------------

const AttrInfo *find_attr(const OpInfo &op, const char *name) {
  for (uint32_t i = 0; i < op.num_attrs; ++i)
    if (std::strcmp(op.attrs[i].name, name) == 0) return &op.attrs[i];
  return nullptr;
}

bool is_index_input(const OpInfo &op, uint32_t declared) {
  const meta::OperandInfo &in = op.inputs[declared];
  if (in.type_var > 0) {
    uint32_t mask = op.type_vars[in.type_var].dtype_mask;
    return (mask & ~((1u << PK_DTYPE_I32) | (1u << PK_DTYPE_I64))) == 0;
  }
  return std::strcmp(in.name, "index") == 0 || std::strcmp(in.name, "indices") == 0;
}

class Generator {
 public:
  Generator(const OpInfo &op, int32_t dtype, Profile profile, uint64_t seed)
      : op_(op), dtype_(dtype), profile_(profile), seed_(seed) {}

  std::vector<Case> run();

 private:
  const OpInfo &op_;
  int32_t dtype_;
  Profile profile_;
  uint64_t seed_;
  std::vector<Case> cases_;
  std::map<std::string, int> counters_;
  std::vector<TensorType> example_inputs_;
  std::vector<uint8_t> example_attrs_;
  bool has_example_ = false;

  bool full() const { return profile_ == Profile::full; }
  std::vector<uint8_t> base_attrs() const;
  int32_t input_dtype(uint32_t declared, int32_t example_dtype) const;
  bool add(const std::string &variant, Spec spec, const std::string &note);
  void layout_variants(const Spec &base, const std::string &prefix);
  void attr_variants(const Spec &base);
  void subnormal_variant(const Spec &base, const std::string &note);
  void elementwise_family();
  void reduce_family(bool scan);
  void example_family();
  void creation_family();
  void exhaustive_family();
  void threshold_family();
  Spec uniform_spec(const std::vector<int64_t> &shape) const;
  bool infer(const Spec &spec, meta::TensorType *outs) const;
  int64_t output_elements(const Spec &spec) const;  // -1 if the spec is invalid
};

std::vector<uint8_t> Generator::base_attrs() const {
  if (op_.attrs_size == 0) return {};
  std::vector<uint8_t> a(meta::kMaxAttrsSize, 0);
  if (has_example_) {
    a = example_attrs_;
  } else {
    meta::default_attrs(op_, a.data());
  }
  // Numeric attributes without a default start from a value that makes the op do something.
  for (uint32_t i = 0; i < op_.num_attrs; ++i) {
    const AttrInfo &at = op_.attrs[i];
    if (at.type != AttrType::f64 || at.has_default || has_example_) continue;
    std::string name = at.name;
    double v = 0.5;
    if (name.find("min") != std::string::npos) v = -0.5;
    if (name.find("max") != std::string::npos) v = 2.0;
    if (name == "value") v = 1.5;
    put<double>(a, at.offset, v);
  }
  if (const AttrInfo *d = find_attr(op_, "dtype"); d && d->type == AttrType::dtype && op_.num_type_vars == 0) {
    put<int32_t>(a, d->offset, dtype_);
  }
  a.resize(op_.attrs_size);
  return a;
}

int32_t Generator::input_dtype(uint32_t declared, int32_t example_dtype) const {
  const meta::OperandInfo &in = op_.inputs[declared];
  if (in.type_var < 0) return in.fixed_dtype;
  if (in.type_var == 0) return dtype_;
  uint32_t mask = op_.type_vars[in.type_var].dtype_mask;
  if (example_dtype >= 0 && (mask & (1u << example_dtype))) return example_dtype;
  if (mask & (1u << PK_DTYPE_I64)) return PK_DTYPE_I64;
  if (mask & (1u << dtype_)) return dtype_;
  return __builtin_ctz(mask);
}

Spec Generator::uniform_spec(const std::vector<int64_t> &shape) const {
  Spec s;
  for (uint32_t i = 0; i < op_.num_inputs; ++i) {
    s.dtypes.push_back(input_dtype(i, -1));
    s.shapes.push_back(shape);
  }
  s.attrs = base_attrs();
  return s;
}

// The op table's rules on a candidate: attributes and the inferred outputs (outs: op.num_outputs entries).
bool Generator::infer(const Spec &spec, meta::TensorType *outs) const {
  std::vector<TensorType> types(spec.shapes.size());
  for (size_t i = 0; i < spec.shapes.size(); ++i) {
    types[i].dtype = spec.dtypes[i];
    types[i].ndim = static_cast<int32_t>(spec.shapes[i].size());
    if (types[i].ndim > PK_MAX_RANK) return false;
    for (int32_t k = 0; k < PK_MAX_RANK; ++k)
      types[i].shape[k] = k < types[i].ndim ? spec.shapes[i][static_cast<size_t>(k)] : 0;
  }
  meta::Diag diag;
  alignas(16) unsigned char normalized[meta::kMaxAttrsSize] = {0};
  if (!spec.attrs.empty()) std::memcpy(normalized, spec.attrs.data(), spec.attrs.size());
  if (op_.attrs_size && !meta::check_attrs(op_, normalized, types.data(), static_cast<uint32_t>(types.size()), diag))
    return false;
  return meta::infer_outputs(op_, types.data(), static_cast<uint32_t>(types.size()),
                             op_.attrs_size ? normalized : nullptr, outs, diag);
}

int64_t Generator::output_elements(const Spec &spec) const {
  meta::TensorType outs[meta::kMaxLaunchOutputs];
  if (!infer(spec, outs)) return -1;
  int64_t n = 0;
  for (uint32_t o = 0; o < op_.num_outputs; ++o) n += meta::numel(outs[o]);
  return n;
}

bool Generator::add(const std::string &variant, Spec spec, const std::string &note) {
  // Validate with the op table's rules before drawing values.
  meta::TensorType outs[meta::kMaxLaunchOutputs];
  if (!infer(spec, outs)) return false;
  for (uint32_t o = 0; o < op_.num_outputs; ++o)
    if (meta::numel(outs[o]) > (int64_t{1} << 22)) return false;  // keep every case cheap

  int &k = counters_[variant];
  Case c;
  c.id = std::string(op_.name) + "." + meta::dtype_name(dtype_) + "." + variant + "." + std::to_string(k++);
  c.op_id = op_.id;
  c.dtype = dtype_;
  c.attrs = spec.attrs;
  c.note = note;
  // The layout variants that apply to every input write their outputs through the same kind of layout (not the
  // reversed one: output strides must be positive).
  if (spec.layout_input < 0) {
    if (spec.layout == Layout::strided) c.output_layout = OutputLayout::strided;
    if (spec.layout == Layout::transposed) c.output_layout = OutputLayout::transposed;
  }
  std::mt19937_64 rng(mix(mix(seed_, c.id), 0x5eed));
  const AttrInfo *dim_attr = find_attr(op_, "dim");
  int64_t period = 1;  // edges: the cross product of every input's edge values
  for (size_t i = 0; i < spec.shapes.size(); ++i) {
    const uint32_t declared = std::min<uint32_t>(static_cast<uint32_t>(i), op_.num_inputs - 1);
    const int32_t dt = spec.dtypes[i];
    const int64_t count = numel_of(spec.shapes[i]);
    std::vector<uint8_t> logical;
    if (spec.values == Values::patterns) {
      const size_t size = meta::dtype_size(dt);
      logical.resize(static_cast<size_t>(count) * size);
      for (int64_t e = 0; e < count; ++e)
        std::memcpy(logical.data() + static_cast<size_t>(e) * size,
                    &spec.patterns[i][static_cast<size_t>(e) % spec.patterns[i].size()], size);
    } else {
      logical = draw_values(dt, count, spec.values, rng, period);
    }
    period *= static_cast<int64_t>(edges_of(dt).size());
    const std::string name = op_.inputs[declared].name;
    if (is_index_input(op_, declared) && !spec.shapes.empty() && meta::is_integer(dt)) {
      // Indices mostly in range of the axis they index, sometimes just outside (defined: skipped or 0).
      const std::vector<int64_t> &a = spec.shapes[0];
      int64_t axis = 0;
      if (dim_attr && dim_attr->type == AttrType::i64) axis = get<int64_t>(spec.attrs, dim_attr->offset);
      if (name == "indices") axis = static_cast<int64_t>(i) - static_cast<int64_t>(declared);
      int64_t extent = axis >= 0 && static_cast<size_t>(axis) < a.size() ? a[static_cast<size_t>(axis)] : 1;
      fill_range(dt, logical, rng() % 4 == 0 ? -1 : 0, extent + (rng() % 4 == 0 ? 1 : 0), rng);
    } else if (name == "sorted_sequence") {
      sort_ascending(dt, logical);
    } else if (op_.name[0] == 's' && std::strncmp(op_.name, "shift_", 6) == 0 && declared == 1) {
      fill_range(dt, logical, -2, static_cast<int64_t>(meta::dtype_size(dt) * 8) + 3, rng);
    }
    const bool gets_layout = spec.layout_input < 0 || spec.layout_input == static_cast<int>(i);
    c.inputs.push_back(make_view(dt, spec.shapes[i], logical, gets_layout ? spec.layout : Layout::contiguous));
  }
  cases_.push_back(std::move(c));
  return true;
}

void Generator::layout_variants(const Spec &base, const std::string &note) {
  for (Layout l : {Layout::transposed, Layout::strided, Layout::offset, Layout::reversed}) {
    Spec s = base;
    s.layout = l;
    add(layout_name(l), s, note + ", " + layout_name(l) + " inputs");
  }
  // Zero stride on each input in turn (and all at once for one-input ops).
  for (size_t i = 0; i < base.shapes.size(); ++i) {
    Spec s = base;
    s.layout = Layout::broadcast;
    s.layout_input = static_cast<int>(i);
    add("broadcast", s, note + ", zero-stride input " + std::to_string(i));
  }
}

void Generator::attr_variants(const Spec &base) {
  for (uint32_t i = 0; i < op_.num_attrs; ++i) {
    const AttrInfo &at = op_.attrs[i];
    if (at.dim_of >= 0 && static_cast<size_t>(at.dim_of) < base.shapes.size()) {
      const int64_t rank = static_cast<int64_t>(base.shapes[static_cast<size_t>(at.dim_of)].size());
      if (at.type == AttrType::i64) {
        for (int64_t d = 0; d < rank; ++d) {
          Spec s = base;
          put<int64_t>(s.attrs, at.offset, d);
          add("attr", s, std::string(at.name) + "=" + std::to_string(d));
        }
      } else if (at.type == AttrType::ints) {
        std::vector<std::vector<int64_t>> lists;
        for (int64_t d = 0; d < rank; ++d) lists.push_back({d});
        std::vector<int64_t> all;
        for (int64_t d = 0; d < rank; ++d) all.push_back(d);
        if (rank > 1) lists.push_back(all);
        lists.push_back({});
        for (const auto &l : lists) {
          Spec s = base;
          put<int32_t>(s.attrs, at.count_offset, static_cast<int32_t>(l.size()));
          for (size_t j = 0; j < l.size(); ++j) put<int64_t>(s.attrs, at.offset + 8 * j, l[j]);
          std::string text;
          for (int64_t d : l) text += (text.empty() ? "" : ",") + std::to_string(d);
          add("attr", s, std::string(at.name) + "=[" + text + "]");
        }
      }
      continue;
    }
    switch (at.type) {
      case AttrType::enumeration:
        for (int32_t v = 0; v < at.enum_count; ++v) {
          Spec s = base;
          put<int32_t>(s.attrs, at.offset, v);
          add("attr", s, std::string(at.name) + "=" + meta::enum_value_name(at.enum_id, v));
        }
        break;
      case AttrType::boolean:
        for (int32_t v = 0; v < 2; ++v) {
          Spec s = base;
          put<int32_t>(s.attrs, at.offset, v);
          add("attr", s, std::string(at.name) + (v ? "=true" : "=false"));
        }
        break;
      case AttrType::f64: {
        const bool is_value = std::strcmp(at.name, "value") == 0 || std::strstr(at.name, "_value") != nullptr;
        std::vector<double> values = {0.25, 3.0};
        if (is_value) {
          const double inf = std::numeric_limits<double>::infinity();
          values = {-0.0, 1.0 / 3.0, -7.0, 300.0, 65520.0, 1e-40, inf, -inf, std::numeric_limits<double>::quiet_NaN()};
        }
        for (double v : values) {
          Spec s = base;
          put<double>(s.attrs, at.offset, v);
          char text[64];
          std::snprintf(text, sizeof text, "%s=%g", at.name, v);
          add("attr", s, text);
        }
        break;
      }
      case AttrType::dtype:
        if (op_.num_type_vars == 0) break;  // creation ops: the dtype is the pair's
        for (int32_t d = 0; d < PK_DTYPE_COUNT; ++d) {
          Spec s = base;
          put<int32_t>(s.attrs, at.offset, d);
          add("attr", s, std::string(at.name) + "=" + meta::dtype_name(d));
          // The edge values into every dtype: conversions at the extremes and just above rounding ties.
          if (base.shapes.size() == 1) {
            s.shapes[0] = {static_cast<int64_t>(edges_of(base.dtypes[0]).size())};
            s.values = Values::edges;
            add("edges", s, std::string(at.name) + "=" + meta::dtype_name(d) + ", every edge value");
          }
        }
        break;
      default:
        break;
    }
  }
}

// Subnormal inputs, and through them subnormal results (a product with 1/2, a sum of subnormals, a mean), for the
// families whose ops are not swept bit pattern by bit pattern: a backend that flushes either without declaring it
// in its float policy fails here. Float and complex dtypes only.
void Generator::subnormal_variant(const Spec &base, const std::string &note) {
  if (!meta::is_float(meta::real_of(dtype_)) && !meta::is_complex(dtype_)) return;
  Spec s = base;
  s.values = Values::tiny;
  for (int k = 0; k < (full() ? 3 : 1); ++k) add("subnormal", s, note + ", subnormal and smallest normal values");
}

void Generator::elementwise_family() {
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {1}, {23}, {1029}, {4, 7}, {3, 1, 5}};
  const char *names[] = {"scalar", "empty", "one", "tail", "tail", "matrix", "rank3"};
  for (size_t i = 0; i < shapes.size(); ++i) add(names[i], uniform_spec(shapes[i]), "shape");
  if (full()) {
    add("large", uniform_spec({65537}), "large vector");
    add("empty", uniform_spec({3, 0, 2}), "empty inner axis");
  }
  // More random draws on a mid-size vector: edge values land in different places each time.
  for (int k = 0; k < (full() ? 6 : 2); ++k) add("random", uniform_spec({257}), "random values with edges");
  if (op_.num_inputs == 1 && meta::is_float(dtype_)) {
    Spec s = uniform_spec({257});
    s.values = Values::positive;
    add("positive", s, "positive inputs");
  }
  // Every edge value against every other (one input: the list; two: all pairs, so every ±0 pair of a min/max-like
  // op and NaN against every number).
  int64_t pairs = 1;
  for (uint32_t i = 0; i < op_.num_inputs; ++i) pairs *= static_cast<int64_t>(edges_of(input_dtype(i, -1)).size());
  if (pairs <= (int64_t{1} << 16)) {
    Spec s = uniform_spec({pairs});
    s.values = Values::edges;
    add("edges", s, "every combination of edge values");
  }
  Spec t = uniform_spec({257});
  t.values = Values::ties;
  add("ties", t, "few distinct values, -0 and +0 among them");
  layout_variants(uniform_spec({5, 6}), "[5,6]");
  if (full()) layout_variants(uniform_spec({33, 65}), "[33,65]");
  attr_variants(uniform_spec({64}));
}

void Generator::reduce_family(bool scan) {
  const AttrInfo *axes = nullptr;
  for (uint32_t i = 0; i < op_.num_attrs; ++i)
    if (op_.attrs[i].dim_of == 0) axes = &op_.attrs[i];
  auto spec = [&](std::vector<int64_t> shape, std::vector<int64_t> dims) {
    Spec s = uniform_spec(shape);
    if (axes && axes->type == AttrType::ints) {
      put<int32_t>(s.attrs, axes->count_offset, static_cast<int32_t>(dims.size()));
      for (size_t j = 0; j < dims.size(); ++j) put<int64_t>(s.attrs, axes->offset + 8 * j, dims[j]);
    } else if (axes && !dims.empty()) {
      put<int64_t>(s.attrs, axes->offset, dims[0]);
    }
    return s;
  };
  struct ShapeDims {
    const char *variant;
    std::vector<int64_t> shape, dims;
  };
  std::vector<ShapeDims> list = {{"scalar", {}, {}},           {"empty", {0}, {0}},        {"one", {1}, {0}},
                                 {"tail", {23}, {0}},          {"tail", {1029}, {0}},      {"matrix", {4, 7}, {1}},
                                 {"matrix", {4, 7}, {0}},      {"matrix", {4, 7}, {0, 1}}, {"matrix", {4, 7}, {}},
                                 {"rank3", {3, 5, 6}, {0, 2}}, {"empty", {3, 0, 2}, {1}},  {"empty", {3, 0, 2}, {0}}};
  if (full()) {
    // Scans are quadratic in the oracle (each prefix is summed exactly): the long axis is for reductions only.
    if (!scan) list.push_back({"large", {65537}, {0}});
    list.push_back({"large", {129, 257}, {1}});
  }
  for (const auto &sd : list) {
    if (scan && sd.dims.size() != 1) continue;
    std::string text;
    for (int64_t d : sd.dims) text += (text.empty() ? "" : ",") + std::to_string(d);
    add(sd.variant, spec(sd.shape, sd.dims), "axes [" + text + "]");
  }
  for (int k = 0; k < (full() ? 4 : 1); ++k) add("random", spec({9, 33}, {1}), "random values with edges");
  // Long rows of finite values, apart from the short rows that carry NaN/±inf: accuracy over 4,096 and 65,537
  // terms, where an accumulator narrower than the contract's drifts past the reduction bound. (Scans evaluate
  // every prefix in the oracle: the 4,096 row only.)
  const std::vector<ShapeDims> long_rows = {{"long", {4096}, {0}}, {"long", {3, 4099}, {1}}, {"long", {65537}, {0}}};
  for (const auto &sd : long_rows) {
    if (scan && numel_of(sd.shape) > 4096) continue;
    Spec s = spec(sd.shape, sd.dims);
    s.values = Values::long_row;
    add(sd.variant, s, "long row of " + std::to_string(sd.shape.back()) + " finite values");
  }
  for (const auto &sd : std::vector<ShapeDims>{{"ties", {9, 33}, {1}}, {"ties", {33, 9}, {0}}}) {
    Spec s = spec(sd.shape, sd.dims);
    s.values = Values::ties;
    add(sd.variant, s, "equal values along the axis, -0 and +0 among them");
  }
  subnormal_variant(spec({9, 33}, {1}), "[9,33] over axis 1");
  layout_variants(spec({5, 6}, {1}), "[5,6] over axis 1");
  layout_variants(spec({5, 6}, {0}), "[5,6] over axis 0");
  // Other attributes (correction, ...): one at a time.
  Spec base = spec({6, 9}, {1});
  for (uint32_t i = 0; i < op_.num_attrs; ++i) {
    if (&op_.attrs[i] == axes) continue;
    const AttrInfo &at = op_.attrs[i];
    if (at.type == AttrType::f64) {
      for (double v : {0.0, 2.0}) {
        Spec s = base;
        put<double>(s.attrs, at.offset, v);
        add("attr", s, std::string(at.name) + "=" + std::to_string(v));
      }
    } else if (at.type == AttrType::boolean) {
      for (int32_t v = 0; v < 2; ++v) {
        Spec s = base;
        put<int32_t>(s.attrs, at.offset, v);
        add("attr", s, std::string(at.name) + (v ? "=true" : "=false"));
      }
    }
  }
}

void Generator::example_family() {
  Spec base;
  if (has_example_) {
    for (size_t i = 0; i < example_inputs_.size(); ++i) {
      const uint32_t declared = std::min<uint32_t>(static_cast<uint32_t>(i), op_.num_inputs - 1);
      base.dtypes.push_back(input_dtype(declared, example_inputs_[i].dtype));
      base.shapes.emplace_back(example_inputs_[i].shape, example_inputs_[i].shape + example_inputs_[i].ndim);
    }
  } else {
    base = uniform_spec({4, 7});
  }
  base.attrs = base_attrs();
  add("example", base, "the op table's example");
  // A non-index input of a second type variable takes the example's dtype above; where that variable also admits the
  // case's dtype (an attention mask that is bool or the query's float type), that form gets cases too, or it
  // would never be graded.
  if (has_example_) {
    for (size_t i = 0; i < base.dtypes.size(); ++i) {
      const uint32_t declared = std::min<uint32_t>(static_cast<uint32_t>(i), op_.num_inputs - 1);
      const meta::OperandInfo &in = op_.inputs[declared];
      // Index operands (gather's i32 or i64) have cases of their own.
      if (in.type_var <= 0 || is_index_input(op_, declared) || base.dtypes[i] == dtype_ ||
          !(op_.type_vars[in.type_var].dtype_mask & (1u << dtype_)))
        continue;
      Spec s = base;
      s.dtypes[i] = dtype_;
      const std::string note = std::string("example shapes, ") + in.name + " in the case's dtype";
      add("operand_dtype", s, note);
      for (int k = 0; k < (full() ? 4 : 1); ++k) add("operand_dtype_random", s, note + ", random values with edges");
    }
  }
  for (int k = 0; k < (full() ? 6 : 2); ++k) add("random", base, "example shapes, random values with edges");
  // Grown and emptied shapes: every input's first axis scaled (valid only where the op allows it).
  for (int64_t factor : {0, 3}) {
    Spec s = base;
    for (auto &shape : s.shapes)
      if (!shape.empty()) shape[0] *= factor;
    add(factor == 0 ? "empty" : "grown", s, factor == 0 ? "first axes emptied" : "first axes tripled");
  }
  // Per extent: every axis of the example with one extent (e.g. matmul's K, M or N, which the example gives
  // distinct sizes) set to 0, so that each empty axis is tried alone (K = 0 must give zeros); and for ops whose
  // contract is a reduction bound, set to 4,096 with long-row values (a long contraction).
  std::vector<int64_t> extents;
  for (const auto &shape : base.shapes)
    for (int64_t e : shape)
      if (e > 1 && std::find(extents.begin(), extents.end(), e) == extents.end()) extents.push_back(e);
  for (int64_t e : extents) {
    for (int64_t to : {int64_t{0}, int64_t{4096}}) {
      if (to > 0 && op_.contract.kind != meta::Contract::reduction) continue;
      Spec s = base;
      int64_t elements = 0;
      for (auto &shape : s.shapes) {
        for (int64_t &x : shape)
          if (x == e) x = to;
        elements += numel_of(shape);
      }
      if (elements > (int64_t{1} << 20)) continue;
      // Long contractions only where the output stays small: the oracle's exact sums (and its O(n^2) DFT) cost
      // about outputs x 4096 terms.
      if (to > 0 && output_elements(s) > 4096) continue;
      if (to > 0) s.values = Values::long_row;
      add(to == 0 ? "empty" : "long", s,
          "axes of extent " + std::to_string(e) + (to == 0 ? " emptied" : " grown to 4096, finite values"));
    }
  }
  Spec ties = base;
  ties.values = Values::ties;
  add("ties", ties, "example shapes, few distinct values (-0 and +0 among them)");
  subnormal_variant(base, "example shapes");
  layout_variants(base, "example shapes");
  attr_variants(base);
}

void Generator::creation_family() {
  Spec base;
  base.attrs = base_attrs();
  add("example", base, "the op table's example");
  if (const AttrInfo *shape = find_attr(op_, "shape"); shape && shape->type == AttrType::ints) {
    const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {1}, {23}, {1029}, {4, 7}, {3, 1, 5}};
    for (const auto &sh : shapes) {
      Spec s = base;
      put<int32_t>(s.attrs, shape->count_offset, static_cast<int32_t>(sh.size()));
      for (size_t j = 0; j < sh.size(); ++j) put<int64_t>(s.attrs, shape->offset + 8 * j, sh[j]);
      add("shape", s, "shape of " + std::to_string(numel_of(sh)) + " elements");
    }
  }
  for (const char *len : {"length", "steps", "n"}) {
    if (const AttrInfo *a = find_attr(op_, len); a && a->type == AttrType::i64) {
      for (int64_t v : {0, 1, 23, 1029}) {
        Spec s = base;
        put<int64_t>(s.attrs, a->offset, v);
        add("shape", s, std::string(len) + "=" + std::to_string(v));
      }
    }
  }
  for (const char *name : {"seed", "offset"}) {
    if (const AttrInfo *a = find_attr(op_, name); a && a->type == AttrType::i64) {
      for (int64_t v : {int64_t{0}, int64_t{5}, int64_t{1} << 40}) {
        Spec s = base;
        put<int64_t>(s.attrs, a->offset, v);
        if (const AttrInfo *shape = find_attr(op_, "shape"); shape && shape->type == AttrType::ints) {
          put<int32_t>(s.attrs, shape->count_offset, 1);
          put<int64_t>(s.attrs, shape->offset, 1029);
        }
        add("attr", s, std::string(name) + "=" + std::to_string(v));
      }
    }
  }
  attr_variants(base);
}

// One-input float ops: every bit pattern of an 8-bit float; every one of a 16-bit float in the full profile and
// every 7th in the quick one (each binade, with the thresholds where results turn subnormal or overflow, lies
// within a few steps); for f32 and f64 a sample of every binade of both signs, subnormals included.
void Generator::exhaustive_family() {
  if (op_.num_inputs != 1 || op_.variadic() || !meta::is_float(dtype_)) return;
  if (input_dtype(0, -1) != dtype_) return;
  Spec s;
  switch (meta::dtype_size(dtype_)) {
    case 1:
      s = uniform_spec({256});
      s.values = Values::exhaustive;
      add("exhaustive", s, "every bit pattern");
      return;
    case 2:
      s = uniform_spec({full() ? 65536 : 65536 / 7});
      s.values = full() ? Values::exhaustive : Values::sweep;
      add(full() ? "exhaustive" : "sweep", s, full() ? "every bit pattern" : "every 7th bit pattern");
      return;
    default: {
      const bool f64 = dtype_ == PK_DTYPE_F64;
      s = uniform_spec({binade_count(dtype_, full() ? (f64 ? 12 : 60) : (f64 ? 2 : 6))});
      s.values = Values::binades;
      add("binades", s, "mantissas from every binade, subnormals included");
      return;
    }
  }
}

// The result class of the oracle's rounded element: what a threshold separates.
enum class ResultClass { nan, pos_inf, neg_inf, zero, subnormal, normal };
ResultClass result_class(const oracle::OutputValue &out, int64_t i) {
  const long double v = out.rounded_at(i).re;
  if (std::isnan(v)) return ResultClass::nan;
  if (std::isinf(v)) return v > 0 ? ResultClass::pos_inf : ResultClass::neg_inf;
  if (v == 0) return ResultClass::zero;
  const oracle::BinaryFormat f = oracle::format_of(out.dtype);
  const long double min_normal = std::ldexp(1.0L, 2 - (1 << (f.exp_bits - 1)));
  return std::fabs(v) < min_normal ? ResultClass::subnormal : ResultClass::normal;
}

// What a threshold separates, per element: the result class in the low bits, and above them, for a composite,
// the conditions of its decomposition (oracle::decomposition_conditions: which branch of a `where`, which operand
// of a maximum), so that an input where the result changes formula is a threshold too.
using ClassCode = uint64_t;

// The oracle's class codes for float op `op` with input `axis` running over the bit patterns `bits` and the
// other input (two-input ops) held at `other` (nullopt if the oracle cannot evaluate them, or the result is no
// float).
std::optional<std::vector<ClassCode>> classify_results(const OpInfo &op, int32_t dtype,
                                                       const std::vector<uint8_t> &attrs,
                                                       const std::vector<uint64_t> &bits, uint32_t axis,
                                                       uint64_t other) {
  const size_t size = meta::dtype_size(dtype);
  std::vector<uint8_t> running(bits.size() * size), fixed(bits.size() * size);
  for (size_t i = 0; i < bits.size(); ++i) {
    std::memcpy(running.data() + i * size, &bits[i], size);
    std::memcpy(fixed.data() + i * size, &other, size);
  }
  const std::vector<int64_t> shape = {static_cast<int64_t>(bits.size())};
  std::vector<HostTensor> in;
  for (uint32_t k = 0; k < op.num_inputs; ++k)
    in.push_back(make_view(dtype, shape, k == axis ? running : fixed, Layout::contiguous));
  std::vector<oracle::OutputValue> outs;
  if (!oracle::evaluate(op.id, in, attrs.empty() ? nullptr : attrs.data(), outs).ok() || outs.empty() ||
      !meta::is_float(outs[0].dtype) || outs[0].numel() != static_cast<int64_t>(bits.size()))
    return std::nullopt;
  std::vector<ClassCode> classes(bits.size());
  for (size_t i = 0; i < bits.size(); ++i)
    classes[i] = static_cast<ClassCode>(result_class(outs[0], static_cast<int64_t>(i)));
  std::vector<std::vector<uint8_t>> conditions;
  if (op.tier == meta::Tier::composite &&
      oracle::decomposition_conditions(op.id, in, attrs.empty() ? nullptr : attrs.data(), conditions).ok()) {
    // Up to 61 conditions in bits 3 and up (a decomposition with more repeats the last bit's meaning).
    for (size_t c = 0; c < conditions.size(); ++c)
      for (size_t i = 0; i < bits.size(); ++i)
        if (conditions[c][i]) classes[i] ^= ClassCode{1} << (3 + std::min<size_t>(c, 60));
  }
  return classes;
}

// The bit patterns of input `axis` around every threshold of the op along that axis (the other input at `other`):
// between neighbouring binade samples of one sign whose result classes differ, a bisection finds the last input of
// one class and the first of the next; each pair comes with its neighbours. At most kMaxThresholds thresholds.
std::vector<uint64_t> thresholds_along(const OpInfo &op, int32_t dtype, const std::vector<uint8_t> &attrs,
                                       uint32_t axis, uint64_t other) {
  std::mt19937_64 unused(0);
  const std::vector<uint64_t> samples = binade_patterns(dtype, 0, unused);  // per sign, in increasing magnitude
  const auto classes = classify_results(op, dtype, attrs, samples, axis, other);
  if (!classes) return {};
  // Neighbouring samples of one sign whose classes differ; ±inf and NaN (the last four) are edges, not ranges.
  const oracle::BinaryFormat f = oracle::format_of(dtype);
  const uint64_t sign_bit = uint64_t{1} << (f.exp_bits + f.man_bits);
  struct Range {
    uint64_t lo, hi, end;  // bisecting [lo, hi]; the samples' range ran to `end`
    ClassCode at_lo, at_hi, at_end;
  };
  std::vector<Range> open, done;
  for (size_t i = 0; i + 1 < samples.size() - 4; ++i)
    if ((samples[i] & sign_bit) == (samples[i + 1] & sign_bit) && (*classes)[i] != (*classes)[i + 1])
      open.push_back({samples[i], samples[i + 1], samples[i + 1], (*classes)[i], (*classes)[i + 1], (*classes)[i + 1]});
  constexpr size_t kMaxThresholds = 48;  // an oscillating op (tan near its poles) changes class often
  // Bisect every open range at once: one oracle call per step, one element per range. A range that crosses
  // several classes (normal, subnormal, zero within one binade) yields one threshold, then opens the rest.
  while (!open.empty() && done.size() < kMaxThresholds) {
    std::vector<uint64_t> mids;
    for (const Range &r : open) mids.push_back(r.lo + (r.hi - r.lo) / 2);
    const auto mid_classes = classify_results(op, dtype, attrs, mids, axis, other);
    if (!mid_classes) return {};
    std::vector<Range> next;
    for (size_t k = 0; k < open.size(); ++k) {
      Range r = open[k];
      if (r.hi - r.lo > 1) {
        if ((*mid_classes)[k] == r.at_lo) {
          r.lo = mids[k];
        } else {
          r.hi = mids[k];
          r.at_hi = (*mid_classes)[k];
        }
      }
      if (r.hi - r.lo > 1) {
        next.push_back(r);
        continue;
      }
      done.push_back(r);
      if (r.at_hi != r.at_end) next.push_back({r.hi, r.end, r.end, r.at_hi, r.at_end, r.at_end});
    }
    open = std::move(next);
  }
  std::vector<uint64_t> patterns;
  const uint64_t inf_bits = ((uint64_t{1} << f.exp_bits) - 1) << f.man_bits;
  for (const Range &r : done) {
    const uint64_t sign = r.lo & sign_bit;
    for (uint64_t b : {r.lo - 1, r.lo, r.hi, r.hi + 1})
      // Neighbours of the same sign, at most ±inf (stepping below ±0 or past ±inf leaves the range).
      if ((b & sign_bit) == sign && (b & ~sign_bit) <= inf_bits &&
          (sign_bit == uint64_t{1} << 63 || b < (sign_bit << 1)))
        patterns.push_back(b);
  }
  std::sort(patterns.begin(), patterns.end());
  patterns.erase(std::unique(patterns.begin(), patterns.end()), patterns.end());
  return patterns;
}

// Float ops of one or two inputs (16 bits and more): the inputs where the op's result changes class — turns
// subnormal, flushes to zero, overflows, becomes NaN — or, for a composite, where it changes formula (a condition
// of its decomposition flips), found on the oracle, per op and dtype (thresholds_along).
// A two-input op is searched along each input with the other held at 0.5, 2 and -3 (pow's and hypot's overflow,
// atan2's and div's underflow). The quick profile's binade and sweep samples pass near these thresholds; this family
// lands on them exactly (an exp that overflows one ulp early, a sigmoid that flushes its first subnormal result).
void Generator::threshold_family() {
  if (op_.num_inputs < 1 || op_.num_inputs > 2 || op_.variadic() || !meta::is_float(dtype_) ||
      meta::dtype_size(dtype_) < 2)
    return;
  for (uint32_t k = 0; k < op_.num_inputs; ++k)
    if (input_dtype(k, -1) != dtype_) return;
  const std::vector<uint8_t> attrs = base_attrs();
  std::vector<uint64_t> others = {0};
  if (op_.num_inputs == 2) {
    others.clear();
    for (long double v : {0.5L, 2.0L, -3.0L}) {
      std::vector<uint8_t> bytes(meta::dtype_size(dtype_));
      Wide w;
      w.re = v;
      oracle::store_rounded(w, dtype_, bytes.data(), oracle::Overflow::standard);
      uint64_t bits = 0;
      std::memcpy(&bits, bytes.data(), bytes.size());
      others.push_back(bits);
    }
  }
  std::vector<std::vector<uint64_t>> inputs(op_.num_inputs);
  for (uint32_t axis = 0; axis < op_.num_inputs; ++axis)
    for (uint64_t other : others)
      for (uint64_t b : thresholds_along(op_, dtype_, attrs, axis, other))
        for (uint32_t k = 0; k < op_.num_inputs; ++k) inputs[k].push_back(k == axis ? b : other);
  if (inputs[0].empty()) return;
  Spec s = uniform_spec({static_cast<int64_t>(inputs[0].size())});
  s.values = Values::patterns;
  s.patterns = std::move(inputs);
  add("thresholds", s,
      "the inputs where the result turns subnormal, zero, infinite or NaN or changes formula, found on the oracle");
}

std::vector<Case> Generator::run() {
  if (op_.example) {
    std::vector<uint8_t> attrs(meta::kMaxAttrsSize, 0);
    meta::Diag diag;
    if (meta::parse_example(op_, op_.example, example_inputs_, attrs.data(), diag)) {
      has_example_ = true;
      example_attrs_ = attrs;
    }
  }
  bool has_axis_attr = false;
  for (uint32_t i = 0; i < op_.num_attrs; ++i) has_axis_attr = has_axis_attr || op_.attrs[i].dim_of >= 0;
  if (op_.num_inputs == 0) {
    creation_family();
  } else if (op_.shape == meta::ShapeRule::elementwise ||
             (op_.shape == meta::ShapeRule::same_as_input && !has_axis_attr && !has_example_)) {
    elementwise_family();
    exhaustive_family();
    threshold_family();
  } else if ((op_.shape == meta::ShapeRule::reduce || op_.shape == meta::ShapeRule::scan) && !op_.variadic() &&
             op_.num_inputs == 1) {
    reduce_family(op_.shape == meta::ShapeRule::scan);
  } else {
    example_family();
  }
  return std::move(cases_);
}

}  // namespace

std::vector<int32_t> op_dtypes(const meta::OpInfo &op) {
  std::vector<int32_t> out;
  if (op.num_type_vars > 0) {
    for (int32_t d = 0; d < PK_DTYPE_COUNT; ++d)
      if (op.type_vars[0].dtype_mask & (1u << d)) out.push_back(d);
    return out;
  }
  // No type variables (creation, RNG): the dtype attribute decides; keep the dtypes the op table accepts.
  const AttrInfo *dt = find_attr(op, "dtype");
  if (dt == nullptr || dt->type != AttrType::dtype) return out;
  std::vector<TensorType> inputs;
  std::vector<uint8_t> attrs(meta::kMaxAttrsSize, 0);
  meta::Diag diag;
  if (op.example == nullptr || !meta::parse_example(op, op.example, inputs, attrs.data(), diag)) return out;
  for (int32_t d = 0; d < PK_DTYPE_COUNT; ++d) {
    put<int32_t>(attrs, dt->offset, d);
    TensorType outs[meta::kMaxLaunchOutputs];
    meta::Diag di;
    if (meta::check_attrs(op, attrs.data(), inputs.data(), static_cast<uint32_t>(inputs.size()), di) &&
        meta::infer_outputs(op, inputs.data(), static_cast<uint32_t>(inputs.size()), attrs.data(), outs, di))
      out.push_back(d);
  }
  return out;
}

std::vector<Case> generate_cases(const meta::OpInfo &op, int32_t dtype, Profile profile, uint64_t seed) {
  return Generator(op, dtype, profile, seed).run();
}

}  // namespace pk::conformance
