#!/usr/bin/env python3
"""Checks the PrimKit oracle against independent references: numpy, ml_dtypes, Python's math module and exact
rational arithmetic (fractions.Fraction).

    test_oracle_numpy.py --dump path/to/primkit_oracle_dump [--verbose] [--only op,op]

For every op of the op table that has a reference below, it generates seeded sample inputs for each dtype the
reference covers, evaluates them all with primkit_oracle_dump (one process, one batch) and compares:
  * exact ops (integer arithmetic, comparisons, data movement, conversions, + - * / sqrt, ...): bit for bit
    (any NaN matches any NaN);
  * transcendental functions: the oracle's rounded result within 0.5 + 1/1024 ULP of the float64 reference
    (essentially correctly rounded) for f32 and narrower, and within 4 ULP for f64 (numpy's own accuracy);
  * sums, products, dot products: bit for bit against the exact rational result rounded once with an
    independent rounding routine written here.
It prints the ops checked and fails listing every mismatch.
"""
import argparse
import math
import os
import subprocess
import sys
from fractions import Fraction

import warnings

import ml_dtypes
import numpy as np

np.seterr(all="ignore")
warnings.filterwarnings("ignore", category=RuntimeWarning)

try:
    import yaml
except ImportError:  # pragma: no cover
    yaml = None
try:  # optional: an arbitrary-precision reference for f64 transcendentals (and special functions)
    import mpmath
    mpmath.mp.prec = 128
except ImportError:  # pragma: no cover
    mpmath = None

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.environ.get("PK_OPS_YAML", os.path.join(HERE, "..", "..", "sdk", "primops", "ops.yaml"))

NP = {
    "bool": np.bool_, "u8": np.uint8, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
    "c64": np.complex64, "c128": np.complex128,
    "f8e4m3fn": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2,
}
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
# (exponent bits, mantissa bits, ieee) of each float format
FMT = {"f16": (5, 10, True), "bf16": (8, 7, True), "f32": (8, 23, True), "f64": (11, 52, True),
       "f8e4m3fn": (4, 3, False), "f8e5m2": (5, 2, True)}
FLOATS = ["f16", "bf16", "f32", "f64"]
FP8 = ["f8e4m3fn", "f8e5m2"]
INTS = ["u8", "i8", "i16", "i32", "i64"]
BITS = {"bool": 8, "u8": 8, "i8": 8, "i16": 16, "i32": 32, "i64": 64}


def is_float(d):
    return d in FMT


def is_int(d):
    return d in INTS


# ---------------------------------------------------------------------------------------------------------
# An independent rounding of exact rationals to a binary format (ties to even), used as the reference for
# sums, products and dot products.
# ---------------------------------------------------------------------------------------------------------

def fmt_max(d):
    e, m, ieee = FMT[d]
    bias = (1 << (e - 1)) - 1
    if ieee:
        return Fraction((2 << m) - 1, 1 << m) * Fraction(2) ** ((1 << e) - 2 - bias)
    return Fraction((2 << m) - 2, 1 << m) * Fraction(2) ** ((1 << e) - 1 - bias)


def round_fraction(x, d):
    """Exact rational -> nearest value of format d (ties to even) as a Python float (inf/nan on overflow)."""
    e_bits, m, ieee = FMT[d]
    if x == 0:
        return 0.0
    sign = -1.0 if x < 0 else 1.0
    a = abs(x)
    bias = (1 << (e_bits - 1)) - 1
    emin = 1 - bias
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    q = max(e, emin) - m
    n = round(a / Fraction(2) ** q)  # Fraction rounding: half to even
    v = Fraction(n) * Fraction(2) ** q
    if v > fmt_max(d):
        return sign * (math.inf if ieee else math.nan)
    return sign * float(v)


def ulp(x, d):
    """ULP of format d at |x| (x a finite float)."""
    e_bits, m, _ = FMT[d]
    emin = 2 - (1 << (e_bits - 1))
    x = abs(x)
    e = math.frexp(x)[1] - 1 if x != 0 else emin
    return math.ldexp(1.0, max(e, emin) - m)


# ---------------------------------------------------------------------------------------------------------
# Talking to primkit_oracle_dump
# ---------------------------------------------------------------------------------------------------------

def shape_text(shape):
    return "[" + ",".join(str(int(s)) for s in shape) + "]"


def tensor_line(arr, d):
    arr = np.asarray(arr)
    if is_float(d):
        nbytes = np.dtype(NP[d]).itemsize
        bits = np.ascontiguousarray(arr.astype(NP[d])).view(UINT[nbytes]).reshape(-1)
        return "input %s %s hex %s" % (d, shape_text(arr.shape), " ".join("%x" % int(b) for b in bits))
    if d in ("c64", "c128"):
        part = {"c64": np.float32, "c128": np.float64}[d]
        flat = arr.astype(NP[d]).reshape(-1)
        nb = np.dtype(part).itemsize
        toks = []
        for z in flat:
            toks.append("%x" % int(np.array([z.real], part).view(UINT[nb])[0]))
            toks.append("%x" % int(np.array([z.imag], part).view(UINT[nb])[0]))
        return "input %s %s hex %s" % (d, shape_text(arr.shape), " ".join(toks))
    flat = arr.astype(np.int64).reshape(-1)
    return "input %s %s %s" % (d, shape_text(arr.shape), " ".join(str(int(v)) for v in flat))


def request_text(op, inputs, attrs):
    lines = ["op " + op]
    for k, v in attrs.items():
        if isinstance(v, (list, tuple)):
            v = "[" + ",".join(str(int(x)) for x in v) + "]"
        elif isinstance(v, bool):
            v = "true" if v else "false"
        lines.append("attr %s=%s" % (k, v))
    for arr, d in inputs:
        lines.append(tensor_line(arr, d))
    lines.append("end")
    return "\n".join(lines) + "\n"


def parse_outputs(text):
    """Yields one result per request: (status, message, [output dicts])."""
    results, cur = [], None
    for line in text.splitlines():
        if line.startswith("status "):
            parts = line.split(" ", 2)
            cur = {"status": parts[1], "message": parts[2] if len(parts) > 2 else "", "outputs": []}
        elif line.startswith("output "):
            _, k, d, shape = line.split(" ")
            shape = [int(s) for s in shape.strip("[]").split(",") if s]
            cur["outputs"].append({"dtype": d, "shape": shape})
        elif line.startswith("bits"):
            cur["outputs"][-1]["bits"] = line.split()[1:]
        elif line.startswith("rounded"):
            cur["outputs"][-1]["rounded"] = line.split()[1:]
        elif line.startswith("wide"):
            cur["outputs"][-1]["wide"] = line.split()[1:]
        elif line == "end":
            results.append(cur)
            cur = None
    return results


def decode(out):
    """The rounded output as a numpy array of its dtype."""
    d = out["dtype"]
    shape = out["shape"]
    if is_float(d):
        nb = np.dtype(NP[d]).itemsize
        bits = np.array([int(b, 16) for b in out["bits"]], dtype=UINT[nb])
        return bits.view(NP[d]).reshape(shape)
    if d in ("c64", "c128"):
        part = {"c64": np.float32, "c128": np.float64}[d]
        nb = np.dtype(part).itemsize
        vals = []
        for tok in out["bits"]:
            re, im = tok.split(":")
            vals.append(complex(np.array([int(re, 16)], UINT[nb]).view(part)[0],
                                np.array([int(im, 16)], UINT[nb]).view(part)[0]))
        return np.array(vals, dtype=NP[d]).reshape(shape)
    return np.array([int(v) for v in out["rounded"]], dtype=np.int64).astype(NP[d]).reshape(shape)


def wide_values(out):
    vals = []
    for tok in out["wide"]:
        if ":" in tok:
            re, im = tok.split(":")
            vals.append(complex(float(re), float(im)))
        else:
            vals.append(float(tok))
    return vals


# ---------------------------------------------------------------------------------------------------------
# Comparisons
# ---------------------------------------------------------------------------------------------------------

def same_value(got, want):
    """Bitwise-equal floats (sign of zero included); NaN matches NaN."""
    got, want = float(got), float(want)
    if math.isnan(want):
        return math.isnan(got)
    return got == want and math.copysign(1, got) == math.copysign(1, want)


def compare_exact(got, want, d):
    got = np.asarray(got).reshape(-1)
    want = np.asarray(want).reshape(-1)
    if got.shape != want.shape:
        return ["shape %s != %s" % (got.shape, want.shape)]
    bad = []
    for i, (g, w) in enumerate(zip(got, want)):
        if d in ("c64", "c128"):
            ok = same_value(g.real, w.real) and same_value(g.imag, w.imag)
        elif is_float(d):
            ok = same_value(np.float64(g), np.float64(w))
        else:
            ok = int(g) == int(w)
        if not ok:
            bad.append("[%d] got %r want %r" % (i, g, w))
    return bad


def compare_ulp(got, ref64, d, limit, floor=0.0):
    """got: rounded oracle output of dtype d; ref64: float64 reference of the exact result. Errors are in ULPs of
    max(|ref|, floor): a floor > 0 accepts absolute errors where the reference is only absolutely accurate."""
    got = np.asarray(got).reshape(-1)
    ref64 = np.asarray(ref64, dtype=np.float64).reshape(-1)
    bad = []
    for i, (g, r) in enumerate(zip(got, ref64)):
        g = float(np.float64(g))
        r = float(r)
        if math.isnan(r) or math.isnan(g):
            if not (math.isnan(r) and math.isnan(g)):
                bad.append("[%d] got %r want %r" % (i, g, r))
            continue
        if math.isinf(g) or math.isinf(r):
            rr = round_fraction(Fraction(r), d) if not math.isinf(r) else r
            if not same_value(g, rr):
                bad.append("[%d] got %r want %r" % (i, g, r))
            continue
        err = abs(g - r) / ulp(max(abs(r), floor), d)
        if err > limit:
            bad.append("[%d] got %r want %r (%.4f ulp)" % (i, g, r, err))
    return bad


# ---------------------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------------------

RNG = np.random.default_rng(20261202)


def specials(d):
    if not is_float(d):
        info = np.iinfo(NP[d])
        return [0, 1, info.max, info.min, info.max - 1, info.min + 1 if info.min else 2]
    e, m, ieee = FMT[d]
    tiny = math.ldexp(1.0, 2 - (1 << (e - 1)) - m)
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, tiny, -tiny, float(fmt_max(d)), -float(fmt_max(d)), math.nan]
    if ieee:
        vals += [math.inf, -math.inf]
    return vals


def floats_in(d, lo, hi, n=48, log=False, with_specials=True):
    if log:
        v = np.exp(RNG.uniform(math.log(lo), math.log(hi), n))
    else:
        v = RNG.uniform(lo, hi, n)
    v = v.astype(np.float64)
    if with_specials:
        v = np.concatenate([np.array(specials(d), dtype=np.float64), v])
    return v.astype(NP[d])


def ints_in(d, n=40):
    info = np.iinfo(NP[d])
    v = RNG.integers(int(info.min), int(info.max), n, endpoint=True, dtype=np.int64 if d != "u8" else np.int64)
    v = np.concatenate([np.array(specials(d), dtype=np.int64), v, RNG.integers(-9, 10, 20) % (info.max + 1)
                        if d == "u8" else RNG.integers(-9, 10, 20)])
    return v.astype(NP[d])


def any_in(d, n=40):
    if is_float(d):
        return floats_in(d, -100, 100, n)
    if d == "bool":
        return RNG.integers(0, 2, n).astype(np.bool_)
    return ints_in(d, n)


# ---------------------------------------------------------------------------------------------------------
# The checks. Each entry: op -> function(dtypes admitted) returning a list of cases
#   (inputs [(array, dtype)], attrs {}, compare(outputs) -> list of mismatch strings)
# ---------------------------------------------------------------------------------------------------------

CHECKS = {}


def check(*names):
    def deco(fn):
        for n in names:
            CHECKS[n] = fn
        return fn
    return deco


def exact_case(inputs, attrs, want, d):
    return (inputs, attrs, lambda outs: compare_exact(decode(outs[0]), want, d))


def np_in(arr, d):
    """numpy values of array arr (of dtype d) as float64 (or int64)."""
    return arr.astype(np.float64) if is_float(d) else arr.astype(np.int64)


def with_errstate(fn, *args):
    with np.errstate(all="ignore"):
        return fn(*args)


# --- unary ops with a correctly rounded / exact numpy equivalent in the dtype itself
EXACT_UNARY_FLOAT = {
    "abs": np.abs, "neg": np.negative, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "sqrt": np.sqrt,
    "square": np.square, "reciprocal": np.reciprocal,
}


def make_exact_unary(name, fn):
    def cases(dtypes):
        out = []
        for d in dtypes:
            if not is_float(d):
                continue
            x = floats_in(d, -50, 50)
            if d in FP8:
                x = np.array([v for v in x.astype(np.float64)], dtype=NP[d])
            want = with_errstate(fn, x)
            out.append(exact_case([(x, d)], {}, want, d))
        return out
    return cases


for _n, _f in EXACT_UNARY_FLOAT.items():
    CHECKS[_n] = make_exact_unary(_n, _f)


@check("round")
def _round(dtypes):
    out = []
    for d in dtypes:
        if not is_float(d):
            continue
        x = np.concatenate([floats_in(d, -20, 20), np.array([0.5, 1.5, 2.5, -0.5, -2.5, 3.5], NP[d])])
        out.append(exact_case([(x, d)], {}, np.round(x), d))
        x64 = x.astype(np.float64)
        away = np.where(np.isfinite(x64), np.copysign(np.floor(np.abs(x64) + 0.5), x64), x64)
        out.append(exact_case([(x, d)], {"mode": "half_away_from_zero"}, away.astype(NP[d]), d))
    return out


@check("sign")
def _sign(dtypes):
    out = []
    for d in dtypes:
        if is_float(d) or is_int(d):
            x = any_in(d)
            out.append(exact_case([(x, d)], {}, np.sign(x), d))
    return out


@check("isfinite", "isnan", "isinf", "signbit")
def _classify(dtypes, _cache={}):
    return []


def make_classify(name, fn):
    def cases(dtypes):
        out = []
        for d in dtypes:
            if is_float(d):
                x = floats_in(d, -10, 10)
                out.append(exact_case([(x, d)], {}, fn(x.astype(np.float64)), "bool"))
            elif is_int(d):
                x = ints_in(d)
                out.append(exact_case([(x, d)], {}, fn(x.astype(np.float64)), "bool"))
        return out
    return cases


for _n, _f in {"isfinite": np.isfinite, "isnan": np.isnan, "isinf": np.isinf, "signbit": np.signbit}.items():
    CHECKS[_n] = make_classify(_n, _f)


@check("bitwise_not")
def _bitwise_not(dtypes):
    out = []
    for d in dtypes:
        if is_int(d):
            x = ints_in(d)
            out.append(exact_case([(x, d)], {}, np.invert(x), d))
        elif d == "bool":
            x = np.array([0, 1, 1, 0], np.bool_)
            out.append(exact_case([(x, d)], {}, np.logical_not(x), d))
    return out


@check("logical_not")
def _logical_not(dtypes):
    out = []
    for d in dtypes:
        x = any_in(d)
        out.append(exact_case([(x, d)], {}, np.logical_not(x), "bool"))
    return out


@check("popcount", "population_count")
def _popcount(dtypes):
    out = []
    for d in dtypes:
        if is_int(d):
            x = ints_in(d)
            out.append(exact_case([(x, d)], {}, np.bitwise_count(x).astype(NP[d]), d))
    return out


# --- transcendental unary ops: compared against float64 numpy / math
def vec(fn):
    return np.vectorize(fn, otypes=[np.float64])


def safe(fn):
    def g(x):
        try:
            return fn(x)
        except (ValueError, OverflowError):
            return math.nan
    return g


def lgamma_ref(x):
    if math.isinf(x):
        return math.inf
    if math.isnan(x):
        return x
    if x <= 0 and x == math.floor(x):
        return math.inf
    try:
        return math.lgamma(x)
    except OverflowError:
        return math.inf


# Arbitrary-precision references (used when mpmath is installed): name -> function of an mpf.
def _mp_table():
    if mpmath is None:
        return {}
    m = mpmath
    def lg(x):
        if x <= 0 and x == m.floor(x):
            return m.inf
        return m.log(abs(m.gamma(x)))
    return {
        "exp": m.exp, "exp2": lambda x: m.power(2, x), "expm1": m.expm1, "log": m.log, "log2": lambda x: m.log(x, 2),
        "log10": m.log10, "log1p": m.log1p, "sin": m.sin, "cos": m.cos, "tan": m.tan, "asin": m.asin,
        "acos": m.acos, "atan": m.atan, "sinh": m.sinh, "cosh": m.cosh, "tanh": m.tanh, "asinh": m.asinh,
        "acosh": m.acosh, "atanh": m.atanh, "erf": m.erf, "erfc": m.erfc, "lgamma": lg, "cbrt": m.cbrt,
        "rsqrt": lambda x: 1 / m.sqrt(x), "sigmoid": lambda x: 1 / (1 + m.exp(-x)),
        "logistic": lambda x: 1 / (1 + m.exp(-x)), "digamma": m.digamma, "erfinv": m.erfinv,
    }


MP = _mp_table()


def compare_ulp_mp(got, x, fn, d, limit):
    """Like compare_ulp, against fn evaluated with mpmath at 128 bits on each input x."""
    bad = []
    for i, (g, xv) in enumerate(zip(np.asarray(got).reshape(-1), np.asarray(x, np.float64).reshape(-1))):
        g, xv = float(np.float64(g)), float(xv)
        if not math.isfinite(xv) or xv == 0:
            continue  # special inputs (and signed zeros) are covered by the float64 comparison
        try:
            r = fn(mpmath.mpf(xv))
        except (ValueError, ZeroDivisionError):
            r = mpmath.nan
        if isinstance(r, mpmath.mpc) or mpmath.isnan(r):
            if not math.isnan(g):
                bad.append("[%d] x=%r got %r want nan" % (i, xv, g))
            continue
        if mpmath.isinf(r):
            rr = float(r)
        else:
            man, exp = r.man_exp
            rr = round_fraction(Fraction(int(man)) * Fraction(2) ** int(exp), d) if man else 0.0
        if math.isinf(rr) or math.isinf(g) or math.isnan(g) or math.isnan(rr):
            if not same_value(g, rr):
                bad.append("[%d] x=%r got %r want %s" % (i, xv, g, mpmath.nstr(r, 20)))
            continue
        u = ulp(rr, d)
        err = abs(mpmath.mpf(g) - r) / u
        if err > limit:
            bad.append("[%d] x=%r got %r want %s (%.4f ulp)" % (i, xv, g, mpmath.nstr(r, 20), float(err)))
    return bad


TRANSCENDENTAL = {
    # name: (reference on float64, (lo, hi), log-uniform?)
    "exp": (np.exp, (-80, 80), False),
    "exp2": (np.exp2, (-120, 120), False),
    "expm1": (np.expm1, (-5, 5), False),
    "log": (np.log, (1e-30, 1e30), True),
    "log2": (np.log2, (1e-30, 1e30), True),
    "log10": (np.log10, (1e-30, 1e30), True),
    "log1p": (np.log1p, (-0.9, 10), False),
    "sin": (np.sin, (-10, 10), False),
    "cos": (np.cos, (-10, 10), False),
    "tan": (np.tan, (-1.5, 1.5), False),
    "asin": (np.arcsin, (-1, 1), False),
    "acos": (np.arccos, (-1, 1), False),
    "atan": (np.arctan, (-100, 100), False),
    "sinh": (np.sinh, (-20, 20), False),
    "cosh": (np.cosh, (-20, 20), False),
    "tanh": (np.tanh, (-10, 10), False),
    "asinh": (np.arcsinh, (-100, 100), False),
    "acosh": (np.arccosh, (1, 1000), False),
    "atanh": (np.arctanh, (-0.99, 0.99), False),
    "erf": (vec(math.erf), (-4, 4), False),
    "erfc": (vec(math.erfc), (-4, 9), False),
    "lgamma": (vec(lgamma_ref), (0.01, 30), False),
    "cbrt": (np.cbrt, (-1000, 1000), False),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (1e-6, 1e6), True),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-20, 20), False),
    "logistic": (lambda x: 1 / (1 + np.exp(-x)), (-20, 20), False),
}


def make_transcendental(name, ref, rng_, log):
    def cases(dtypes):
        out = []
        for d in dtypes:
            if d not in FLOATS:
                continue
            lo, hi = rng_
            if d in ("f16", "bf16") and name in ("exp", "exp2", "sinh", "cosh"):
                lo, hi = lo / 8, hi / 8
            x = floats_in(d, lo, hi, n=64, log=log)
            ref64 = with_errstate(ref, x.astype(np.float64))
            limit = 4.0 if d == "f64" else 0.5 + 1.0 / 1024
            # math.lgamma is accurate only in absolute terms near its zeros at 1 and 2
            floor = 1.0 if (name == "lgamma" and d == "f64") else 0.0
            mp_fn = MP.get(name)

            def cmp(outs, ref64=ref64, d=d, limit=limit, floor=floor, x=x, mp_fn=mp_fn):
                got = decode(outs[0])
                bad = compare_ulp(got, ref64, d, limit, floor)
                if mp_fn is not None:  # the f64 gap of the oracle is documented: at most 1 ulp
                    bad += ["mpmath " + b for b in compare_ulp_mp(got, x, mp_fn, d, 1.0 if d == "f64" else limit)]
                return bad
            out.append(([(x, d)], {}, cmp))
        return out
    return cases


for _n, (_f, _r, _l) in TRANSCENDENTAL.items():
    CHECKS[_n] = make_transcendental(_n, _f, _r, _l)


# --- binary ops
def binary_inputs(d, lo=-100, hi=100):
    a = floats_in(d, lo, hi)
    b = floats_in(d, lo, hi)
    b = np.roll(b, 3)  # pair specials with other specials and with ordinary values
    return a, b


EXACT_BINARY_FLOAT = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "maximum": np.maximum,
    "minimum": np.minimum, "fmax": np.fmax, "fmin": np.fmin, "copysign": np.copysign, "fmod": np.fmod,
}


def fix_signed_zero_max(fn, a, b):
    r = with_errstate(fn, a, b)
    return r


def make_exact_binary(name, fn):
    def cases(dtypes):
        out = []
        for d in dtypes:
            if is_float(d):
                a, b = binary_inputs(d)
                want = with_errstate(fn, a, b)
                if name in ("maximum", "fmax"):  # numpy may keep either zero; the table says +0
                    z = (a == 0) & (b == 0)
                    want = np.where(z, np.abs(a), want).astype(NP[d])
                if name in ("minimum", "fmin"):
                    z = (a == 0) & (b == 0)
                    want = np.where(z, -np.abs(a), want).astype(NP[d])
                out.append(exact_case([(a, d), (b, d)], {}, np.asarray(want).astype(NP[d]), d))
        return out
    return cases


for _n, _f in EXACT_BINARY_FLOAT.items():
    CHECKS[_n] = make_exact_binary(_n, _f)


def wrap(v, d):
    bits = BITS[d]
    v &= (1 << bits) - 1
    if d != "u8" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def int_binary_ref(name, x, y, d):
    bits = BITS[d]
    if name == "add":
        return wrap(x + y, d)
    if name == "sub":
        return wrap(x - y, d)
    if name == "mul":
        return wrap(x * y, d)
    if name == "div":
        if y == 0:
            return 0
        q = abs(x) // abs(y)
        return wrap(q if (x >= 0) == (y >= 0) else -q, d)
    if name in ("fmod", "rem"):
        if y == 0:
            return 0
        r = abs(x) % abs(y)
        return wrap(r if x >= 0 else -r, d)
    if name == "maximum":
        return max(x, y)
    if name == "minimum":
        return min(x, y)
    if name == "shift_left":
        return 0 if y < 0 or y >= bits else wrap(x << y, d)
    if name == "shift_right_arithmetic":
        if y < 0 or y >= bits:
            return -1 if x < 0 else 0
        return x >> y
    if name == "shift_right_logical":
        if y < 0 or y >= bits:
            return 0
        return wrap((x & ((1 << bits) - 1)) >> y, d)
    if name == "bitwise_and":
        return wrap(x & y, d)
    if name == "bitwise_or":
        return wrap(x | y, d)
    if name == "bitwise_xor":
        return wrap(x ^ y, d)
    raise KeyError(name)


def make_int_binary(name):
    def cases(dtypes):
        out = []
        for d in dtypes:
            if not is_int(d):
                continue
            a = ints_in(d)
            if name.startswith("shift"):
                b = RNG.integers(-2, BITS[d] + 3, a.size).astype(NP[d]) if d != "u8" else \
                    RNG.integers(0, BITS[d] + 3, a.size).astype(NP[d])
            else:
                b = np.roll(ints_in(d), 5)
            want = np.array([int_binary_ref(name, int(x), int(y), d) for x, y in zip(a, b)], dtype=np.int64)
            out.append(exact_case([(a, d), (b, d)], {}, want, d))
        return out
    return cases


INT_BINARY = ["add", "sub", "mul", "div", "fmod", "rem", "maximum", "minimum", "shift_left",
              "shift_right_arithmetic", "shift_right_logical", "bitwise_and", "bitwise_or", "bitwise_xor"]


def combine(*fns):
    def cases(dtypes):
        out = []
        for f in fns:
            out += f(dtypes)
        return out
    return cases


for _n in INT_BINARY:
    CHECKS[_n] = combine(CHECKS[_n], make_int_binary(_n)) if _n in CHECKS else make_int_binary(_n)


def make_compare(name, fn):
    def cases(dtypes):
        out = []
        for d in dtypes:
            if is_float(d):
                a, b = binary_inputs(d, -3, 3)
                a = np.concatenate([a, b[:10]])  # some equal pairs
                b = np.concatenate([b, b[:10]])
            elif is_int(d):
                a, b = ints_in(d), np.roll(ints_in(d), 2)
            else:
                continue
            out.append(exact_case([(a, d), (b, d)], {}, fn(a, b), "bool"))
        return out
    return cases


for _n, _f in {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
               "ge": np.greater_equal}.items():
    CHECKS[_n] = make_compare(_n, _f)


def make_logical(name, fn):
    def cases(dtypes):
        out = []
        for d in dtypes:
            if d == "bool" or is_int(d):
                a = RNG.integers(0, 2, 32).astype(NP[d])
                b = RNG.integers(0, 2, 32).astype(NP[d])
                out.append(exact_case([(a, d), (b, d)], {}, fn(a, b), "bool" if name.startswith("logical") else d))
        return out
    return cases


for _n, _f in {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor}.items():
    CHECKS[_n] = make_logical(_n, _f)

BINARY_TRANSCENDENTAL = {
    "pow": (np.power, (0.01, 10), (-10, 10)),
    "atan2": (np.arctan2, (-10, 10), (-10, 10)),
    "hypot": (np.hypot, (-1e3, 1e3), (-1e3, 1e3)),
}


def make_binary_transcendental(name, ref, ra, rb):
    def cases(dtypes):
        out = []
        for d in dtypes:
            if d not in FLOATS:
                continue
            a = floats_in(d, *ra, n=64)
            b = np.roll(floats_in(d, *rb, n=64), 7)
            ref64 = with_errstate(ref, a.astype(np.float64), b.astype(np.float64))
            limit = 4.0 if d == "f64" else 0.5 + 1.0 / 1024
            out.append(([(a, d), (b, d)], {}, lambda outs, ref64=ref64, d=d, limit=limit:
                         compare_ulp(decode(outs[0]), ref64, d, limit)))
        return out
    return cases


for _n, (_f, _a, _b) in BINARY_TRANSCENDENTAL.items():
    CHECKS[_n] = make_binary_transcendental(_n, _f, _a, _b)


@check("nextafter")
def _nextafter(dtypes):
    out = []
    for d in dtypes:
        if d in ("f16", "f32", "f64"):
            a, b = binary_inputs(d, -2, 2)
            out.append(exact_case([(a, d), (b, d)], {}, np.nextafter(a, b), d))
    return out


# --- ternary
@check("where")
def _where(dtypes):
    out = []
    for d in dtypes:
        if d in ("c64", "c128"):
            continue
        p = RNG.integers(0, 2, 40).astype(np.bool_)
        a, b = any_in(d, 40 - len(specials(d)) if d != "bool" else 40), any_in(d, 40 - len(specials(d))
                                                                              if d != "bool" else 40)
        n = min(len(a), len(b), len(p))
        a, b, p = a[:n], b[:n], p[:n]
        out.append(exact_case([(p, "bool"), (a, d), (b, d)], {}, np.where(p, a, b), d))
    return out


@check("clamp")
def _clamp(dtypes):
    out = []
    for d in dtypes:
        if is_float(d) and d not in FP8:
            x = floats_in(d, -10, 10, with_specials=False)
            lo = np.full_like(x, -2)
            hi = np.full_like(x, 3)
            out.append(exact_case([(x, d), (lo, d), (hi, d)], {}, np.clip(x, lo, hi), d))
        elif is_int(d):
            x = ints_in(d)
            lo = np.full_like(x, 0)
            hi = np.full_like(x, 100)
            out.append(exact_case([(x, d), (lo, d), (hi, d)], {}, np.clip(x, lo, hi), d))
    return out


@check("fma")
def _fma(dtypes):
    out = []
    for d in dtypes:
        if d not in FLOATS:
            continue
        a = floats_in(d, -10, 10, with_specials=False)
        b = floats_in(d, -10, 10, with_specials=False)
        c = -(a.astype(np.float64) * b.astype(np.float64)).astype(NP[d])  # cancellation: exposes double rounding
        c = np.where(np.arange(c.size) % 2 == 0, c, floats_in(d, -10, 10, with_specials=False)).astype(NP[d])
        want = np.array([round_fraction(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), d)
                         for x, y, z in zip(a, b, c)]).astype(NP[d])
        out.append(exact_case([(a, d), (b, d), (c, d)], {}, want, d))
    return out


# --- conversions: bit for bit against numpy / ml_dtypes
def convert_ref(x, src, dst):
    if is_float(src) and is_int(dst):
        info = np.iinfo(NP[dst])
        v = np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0, posinf=float(info.max), neginf=float(info.min))
        return np.array([min(max(int(t), int(info.min)), int(info.max)) if math.isfinite(t) else 0
                         for t in v], dtype=np.int64).astype(NP[dst])
    if dst == "bool":
        return x.astype(np.float64) != 0 if is_float(src) else x != 0
    if is_int(src) and is_int(dst):
        return x.astype(NP[dst])  # numpy wraps
    if dst == "f8e4m3fn":  # the table: conversions to e4m3fn saturate to +-448 (NaN stays NaN)
        v = x.astype(np.float64)
        v = np.where(np.isnan(v), v, np.clip(v, -448.0, 448.0))
        return v.astype(NP[dst])
    return x.astype(NP[dst])


@check("convert_element_type")
def _convert(dtypes):
    out = []
    srcs = [d for d in dtypes if d not in ("c64", "c128")]
    for src in srcs:
        if is_float(src):
            x = floats_in(src, -300, 300, n=64)
            if src in ("f32", "f64"):
                # values near the narrow formats' rounding boundaries
                x = np.concatenate([x, np.array([1.00390625, 1.01171875, 65519, 65520, 448, 464, 465, 57344,
                                                 61439, 61440, 1e-8, 6e-8, 2 ** -24, 2 ** -25, 3 * 2 ** -26,
                                                 -2 ** -133, 1 + 2 ** -11, 1 + 3 * 2 ** -11], np.float64)
                                     .astype(NP[src])])
                x = np.concatenate([x, (RNG.standard_normal(200) * 10.0 ** RNG.integers(-6, 6, 200)).astype(NP[src])])
        elif src == "bool":
            x = np.array([0, 1, 1, 0], np.bool_)
        else:
            x = ints_in(src)
        for dst in srcs:
            if dst == src:
                continue
            want = with_errstate(convert_ref, x, src, dst)
            out.append(exact_case([(x, src)], {"dtype": dst}, want, dst))
    return out


# --- reductions: exact rational sums rounded once
def reduce_ref(x, dims, fn):
    return np.apply_over_axes(fn, x, dims) if dims else x


def exact_sum(vals, d):
    vals = [float(v) for v in vals]
    if any(math.isnan(v) for v in vals):
        return math.nan
    infs = [v for v in vals if math.isinf(v)]
    if infs:
        return math.nan if (math.inf in infs and -math.inf in infs) else infs[0]
    if vals and all(v == 0 for v in vals) and all(math.copysign(1, v) < 0 for v in vals):
        return -0.0
    return round_fraction(sum((Fraction(v) for v in vals), Fraction(0)), d)


def reduce_axes(x, dims, fn):
    """Applies fn(list of values) over the axes dims of x; returns an array of the remaining shape."""
    keep = [k for k in range(x.ndim) if k not in dims]
    moved = np.transpose(x, keep + list(dims))
    out_shape = [x.shape[k] for k in keep]
    flat = moved.reshape(int(np.prod(out_shape, dtype=np.int64)), -1)
    return [fn(list(row)) for row in flat], out_shape


@check("sum")
def _sum(dtypes):
    out = []
    for d in dtypes:
        for shape, dims in (([7], [0]), ([3, 4, 5], [1]), ([3, 4, 5], [0, 2]), ([2, 3], []), ([4, 0], [1])):
            n = int(np.prod(shape))
            if is_float(d):
                x = (RNG.standard_normal(n) * 10.0 ** RNG.integers(-3, 4, n)).astype(NP[d]).reshape(shape)
                vals, oshape = reduce_axes(x, dims, lambda v: exact_sum(v, d))
                want = np.array(vals, dtype=np.float64).astype(NP[d]).reshape(oshape)
            elif is_int(d):
                x = ints_in(d, max(n, 1) + 40)[:n].reshape(shape)
                vals, oshape = reduce_axes(x, dims, lambda v: wrap(sum(int(t) for t in v), d))
                want = np.array(vals, dtype=np.int64).reshape(oshape)
            else:
                continue
            out.append(exact_case([(x, d)], {"dims": dims}, want, d))
    return out


@check("prod")
def _prod(dtypes):
    out = []
    for d in dtypes:
        if d not in FLOATS and not is_int(d):
            continue
        shape, dims = [4, 6], [1]
        if is_float(d):
            x = RNG.uniform(0.5, 2, 24).astype(NP[d]).reshape(shape)

            def p(v):
                r = Fraction(1)
                for t in v:
                    r *= Fraction(float(t))
                return round_fraction(r, d)
            vals, oshape = reduce_axes(x, dims, p)
            want = np.array(vals, np.float64).astype(NP[d]).reshape(oshape)
        else:
            x = RNG.integers(-5, 6, 24).astype(NP[d]).reshape(shape)

            def pi(v):
                r = 1
                for t in v:
                    r *= int(t)
                return wrap(r, d)
            vals, oshape = reduce_axes(x, dims, pi)
            want = np.array(vals, np.int64).reshape(oshape)
        out.append(exact_case([(x, d)], {"dims": dims}, want, d))
    return out


def make_extreme(name, fn):
    def cases(dtypes):
        out = []
        for d in dtypes:
            if not (is_float(d) or is_int(d)):
                continue
            x = any_in(d, 60)[:60].reshape(6, 10) if is_float(d) else ints_in(d)[:40].reshape(4, 10)
            if is_float(d):
                x = x.copy()
                x[0] = np.array(RNG.uniform(-5, 5, 10), dtype=np.float64).astype(NP[d])  # a row without NaN
            for dims in ([1], [0], [0, 1]):
                want = with_errstate(fn, x, tuple(dims))
                out.append(exact_case([(x, d)], {"dims": dims}, want, d))
        return out
    return cases


CHECKS["amax"] = make_extreme("amax", lambda x, ax: np.max(x, axis=ax))
CHECKS["amin"] = make_extreme("amin", lambda x, ax: np.min(x, axis=ax))


def make_arg(name, fn):
    def cases(dtypes):
        out = []
        for d in dtypes:
            if not (is_float(d) or is_int(d)):
                continue
            if is_float(d):
                x = RNG.integers(-3, 4, 40).astype(np.float64).astype(NP[d]).reshape(4, 10)  # ties
                x[2, 5] = np.nan
            else:
                x = RNG.integers(-3, 4, 40).astype(NP[d]).reshape(4, 10)
            for dim in (0, 1):
                out.append(exact_case([(x, d)], {"dim": dim}, fn(x, axis=dim), "i64"))
        return out
    return cases


CHECKS["argmax"] = make_arg("argmax", np.argmax)
CHECKS["argmin"] = make_arg("argmin", np.argmin)


def make_bool_reduce(name, fn):
    def cases(dtypes):
        out = []
        for d in dtypes:
            x = RNG.integers(0, 2, 24).astype(NP[d]).reshape(4, 6)
            x[1] = 1
            x[2] = 0
            out.append(exact_case([(x, d)], {"dims": [1]}, fn(x, axis=1), "bool"))
        return out
    return cases


CHECKS["any"] = make_bool_reduce("any", np.any)
CHECKS["all"] = make_bool_reduce("all", np.all)


@check("cumsum")
def _cumsum(dtypes):
    out = []
    for d in dtypes:
        if is_float(d) and d not in FP8:
            x = RNG.standard_normal(30).astype(NP[d]).reshape(3, 10)
            want = np.zeros(x.shape, np.float64)
            for i in range(3):
                acc = Fraction(0)
                for j in range(10):
                    acc += Fraction(float(x[i, j]))
                    want[i, j] = round_fraction(acc, d)
            out.append(exact_case([(x, d)], {"dim": 1}, want.astype(NP[d]), d))
        elif is_int(d):
            x = ints_in(d)[:30].reshape(3, 10)
            want = np.array([[wrap(sum(int(t) for t in row[:j + 1]), d) for j in range(10)] for row in x])
            out.append(exact_case([(x, d)], {"dim": 1}, want, d))
    return out


# --- linear algebra
@check("matmul")
def _matmul(dtypes):
    out = []
    for d in dtypes:
        if d in FLOATS:
            a = RNG.standard_normal((3, 5)).astype(NP[d])
            b = RNG.standard_normal((5, 4)).astype(NP[d])
            want = np.zeros((3, 4))
            for i in range(3):
                for j in range(4):
                    want[i, j] = round_fraction(sum((Fraction(float(a[i, k])) * Fraction(float(b[k, j]))
                                                     for k in range(5)), Fraction(0)), d)
            out.append(exact_case([(a, d), (b, d)], {}, want.astype(NP[d]), d))
        elif is_int(d):
            a = RNG.integers(-100, 100, (3, 5)).astype(NP[d])
            b = RNG.integers(-100, 100, (5, 4)).astype(NP[d])
            want = np.array([[wrap(sum(int(a[i, k]) * int(b[k, j]) for k in range(5)), d) for j in range(4)]
                             for i in range(3)])
            out.append(exact_case([(a, d), (b, d)], {}, want, d))
    return out


# --- shape and data movement
@check("broadcast_in_dim")
def _broadcast(dtypes):
    out = []
    for d in dtypes:
        if d in ("c64", "c128"):
            continue
        x = any_in(d, 12)[:12].reshape(3, 1, 4) if d != "bool" else RNG.integers(0, 2, 12).astype(np.bool_).reshape(
            3, 1, 4)
        want = np.broadcast_to(x.reshape(1, 3, 1, 4), (2, 3, 5, 4))
        out.append(exact_case([(x, d)], {"shape": [2, 3, 5, 4], "broadcast_dimensions": [1, 2, 3]}, want, d))
    return out


@check("cat")
def _cat(dtypes):
    out = []
    for d in dtypes:
        if d in ("c64", "c128") or d == "bool":
            continue
        a = any_in(d, 12)[:6].reshape(2, 3)
        b = any_in(d, 12)[:9].reshape(3, 3)
        out.append(exact_case([(a, d), (b, d)], {"dim": 0}, np.concatenate([a, b], 0), d))
    return out


@check("full")
def _full(dtypes):
    out = []
    for d in dtypes:
        if not is_float(d):
            continue
        for v in (0.1, -2.5, 1e10, 65520.0, 464.0, 465.0):
            # "value rounded to dtype": one rounding, no saturation (that rule is convert_element_type's)
            want = np.array([round_fraction(Fraction(v), d)] * 6, np.float64).astype(NP[d]).reshape(2, 3)
            out.append(exact_case([], {"shape": [2, 3], "value": repr(v), "dtype": d}, want, d))
    return out


# --- more data movement (attribute names as the op table declares them; see ATTR_NAMES)
def movable(d, n):
    if d == "bool":
        return RNG.integers(0, 2, n).astype(np.bool_)
    if d in ("c64", "c128"):
        return (RNG.standard_normal(n) + 1j * RNG.standard_normal(n)).astype(NP[d])
    if is_float(d):
        return floats_in(d, -100, 100, n=n, with_specials=False)
    return ints_in(d, n)[:n]


def movement_dtypes(dtypes):
    return [d for d in dtypes if d in ("f32", "f16", "bf16", "f64", "i32", "i64", "u8", "i8", "bool", "c64",
                                       "f8e4m3fn")]


@check("transpose", "permute")
def _transpose(dtypes):
    out = []
    for d in movement_dtypes(dtypes):
        x = movable(d, 24).reshape(2, 3, 4)
        out.append(exact_case([(x, d)], {"@perm": [2, 0, 1]}, np.transpose(x, (2, 0, 1)), d))
    return out


@check("reshape")
def _reshape(dtypes):
    out = []
    for d in movement_dtypes(dtypes):
        x = movable(d, 24).reshape(2, 3, 4)
        out.append(exact_case([(x, d)], {"shape": [4, 6]}, x.reshape(4, 6), d))
    return out


@check("rev", "flip")
def _rev(dtypes):
    out = []
    for d in movement_dtypes(dtypes):
        x = movable(d, 24).reshape(2, 3, 4)
        out.append(exact_case([(x, d)], {"dims": [0, 2]}, np.flip(x, (0, 2)), d))
    return out


@check("slice")
def _slice(dtypes):
    out = []
    for d in movement_dtypes(dtypes):
        x = movable(d, 60).reshape(5, 12)
        out.append(exact_case([(x, d)], {"@start": [1, 2], "@limit": [4, 11], "@step": [2, 3]}, x[1:4:2, 2:11:3], d))
    return out


@check("pad")
def _pad(dtypes):
    out = []
    for d in movement_dtypes(dtypes):
        if d in ("c64", "bool"):
            continue
        x = movable(d, 6).reshape(2, 3)
        want = np.pad(x.astype(np.float64) if is_float(d) else x, ((1, 2), (0, 1)), constant_values=0).astype(NP[d])
        out.append(exact_case([(x, d)], {"@low": [1, 0], "@high": [2, 1]}, want, d))
    return out


@check("iota")
def _iota(dtypes):
    out = []
    for d in dtypes:
        if is_int(d) or d in ("f32", "f64"):
            out.append(exact_case([], {"@iota": (d, 7)}, np.arange(7).astype(NP[d]), d))
    return out


@check("gather", "take_along_dim")
def _gather(dtypes):
    out = []
    for d in movement_dtypes(dtypes):
        x = movable(d, 12).reshape(3, 4)
        idx = RNG.integers(0, 3, (5, 4)).astype(np.int64)
        out.append(exact_case([(x, d), (idx, "i64")], {"dim": 0}, np.take_along_axis(x, idx, 0), d))
    return out


@check("index_select")
def _index_select(dtypes):
    out = []
    for d in movement_dtypes(dtypes):
        x = movable(d, 12).reshape(3, 4)
        idx = np.array([3, 0, 0, 2, 1], np.int64)
        out.append(exact_case([(x, d), (idx, "i64")], {"dim": 1}, np.take(x, idx, 1), d))
    return out


@check("scatter_add")
def _scatter_add(dtypes):
    out = []
    for d in dtypes:
        if d not in ("f32", "f64", "i32", "i64"):
            continue
        x = movable(d, 12).reshape(3, 4)
        idx = RNG.integers(0, 3, (5, 4)).astype(np.int64)
        src = movable(d, 20).reshape(5, 4)
        if is_float(d):
            want = np.zeros((3, 4))
            for i in range(3):
                for j in range(4):
                    terms = [Fraction(float(x[i, j]))] + [Fraction(float(src[r, j])) for r in range(5) if idx[r, j] == i]
                    want[i, j] = round_fraction(sum(terms, Fraction(0)), d)
            want = want.astype(NP[d])
        else:
            want = np.array([[wrap(int(x[i, j]) + sum(int(src[r, j]) for r in range(5) if idx[r, j] == i), d)
                              for j in range(4)] for i in range(3)])
        out.append(exact_case([(x, d), (idx, "i64"), (src, d)], {"dim": 0}, want, d))
    return out


def sort_key_nan_last(v):
    return (1, 0.0) if math.isnan(v) else (0, v)


@check("sort")
def _sort(dtypes):
    out = []
    for d in dtypes:
        if not (is_float(d) or is_int(d)):
            continue
        x = RNG.integers(-4, 5, 40).astype(np.float64)
        if is_float(d):
            x[[3, 17, 30]] = np.nan
        x = x.astype(NP[d]).reshape(4, 10)
        for desc in (False, True):
            vals, idxs = [], []
            for row in x.astype(np.float64):
                order = sorted(range(10), key=lambda i: sort_key_nan_last(row[i]), reverse=False)
                if desc:  # stable descending: NaN first, ties keep index order
                    order = sorted(range(10), key=lambda i: (-sort_key_nan_last(row[i])[0],
                                                             -sort_key_nan_last(row[i])[1]))
                vals.append([row[i] for i in order])
                idxs.append(order)
            wv = np.array(vals).astype(NP[d])
            wi = np.array(idxs, np.int64)

            def cmp(outs, wv=wv, wi=wi, d=d):
                bad = compare_exact(decode(outs[0]), wv, d)
                if len(outs) > 1:
                    bad += ["indices " + b for b in compare_exact(decode(outs[1]), wi, "i64")]
                return bad
            out.append(([(x, d)], {"dim": 1, "descending": desc}, cmp))
    return out


@check("topk")
def _topk(dtypes):
    out = []
    for d in dtypes:
        if not (is_float(d) or is_int(d)):
            continue
        x = RNG.integers(-4, 5, 40).astype(np.float64).astype(NP[d]).reshape(4, 10)
        vals, idxs = [], []
        for row in x.astype(np.float64):
            order = sorted(range(10), key=lambda i: -row[i])[:3]
            vals.append([row[i] for i in order])
            idxs.append(order)

        def cmp(outs, wv=np.array(vals).astype(NP[d]), wi=np.array(idxs, np.int64), d=d):
            return compare_exact(decode(outs[0]), wv, d) + compare_exact(decode(outs[1]), wi, "i64")
        out.append(([(x, d)], {"dim": 1, "k": 3}, cmp))
    return out


@check("fft")
def _fft(dtypes):
    out = []
    for d in dtypes:
        if d not in ("c64", "c128"):
            continue
        x = (RNG.standard_normal(24) + 1j * RNG.standard_normal(24)).astype(NP[d]).reshape(2, 12)
        ref = np.fft.fft(x.astype(np.complex128), axis=1)
        part = "f32" if d == "c64" else "f64"

        def cmp(outs, ref=ref, part=part):
            # numpy's float64 FFT is accurate to ~1e-16 of the transform's norm: c64 results must be correctly
            # rounded (0.5 ulp + slack), c128 ones within a few ulp of the largest output
            got = decode(outs[0])
            if part == "f32":
                limit, floor = 0.5 + 1.0 / 1024, 0.0
            else:
                limit, floor = 8.0, float(np.max(np.abs(ref)))
            bad = compare_ulp(got.real, ref.real, part, limit, floor)
            bad += compare_ulp(got.imag, ref.imag, part, limit, floor)
            return bad
        out.append(([(x, d)], {"dim": 1}, cmp))
    return out


@check("svd")
def _svd(dtypes):
    out = []
    for d in dtypes:
        if d not in ("f32", "f64"):
            continue
        for shape in ((5, 3), (3, 5), (4, 4)):
            a = RNG.standard_normal(shape).astype(NP[d])
            s_ref = np.linalg.svd(a.astype(np.float64), compute_uv=False)

            def cmp(outs, a=a, s_ref=s_ref, d=d):
                s = decode(outs[1]).astype(np.float64)
                bad = compare_ulp(s, s_ref, d, 1.0 if d == "f32" else 1e6)
                u = np.array(wide_values(outs[0])).reshape(outs[0]["shape"])
                v = np.array(wide_values(outs[2])).reshape(outs[2]["shape"])
                sw = np.array(wide_values(outs[1]))
                # V may be returned as V [n, k] or as V^T [k, n]; one of them must reconstruct A
                errs = [np.max(np.abs(u @ np.diag(sw) @ vt - a.astype(np.float64)))
                        for vt in (v, v.T) if vt.shape == (len(sw), a.shape[1])]
                if not errs or min(errs) > 1e-12:
                    bad.append("U S V^T does not reconstruct A (max error %s)" % errs)
                if np.max(np.abs(u.T @ u - np.eye(len(sw)))) > 1e-15:
                    bad.append("U columns are not orthonormal")
                return bad
            out.append(([(a, d)], {}, cmp))
    return out


@check("conv", "convolution")
def _conv(dtypes):
    out = []
    for d in dtypes:
        if d not in ("f32", "f64"):
            continue
        x = RNG.standard_normal((2, 4, 7, 6)).astype(NP[d])
        w = RNG.standard_normal((6, 2, 3, 2)).astype(NP[d])  # groups = 2
        stride, pad, dil, groups = (2, 1), (1, 0), (1, 2), 2
        oh = (7 + 2 * pad[0] - dil[0] * (3 - 1) - 1) // stride[0] + 1
        ow = (6 + 2 * pad[1] - dil[1] * (2 - 1) - 1) // stride[1] + 1
        want = np.zeros((2, 6, oh, ow))
        for n in range(2):
            for o in range(6):
                g = o // 3
                for i in range(oh):
                    for j in range(ow):
                        acc = Fraction(0)
                        for c in range(2):
                            for p in range(3):
                                for q in range(2):
                                    y = i * stride[0] + p * dil[0] - pad[0]
                                    z = j * stride[1] + q * dil[1] - pad[1]
                                    if 0 <= y < 7 and 0 <= z < 6:
                                        acc += Fraction(float(x[n, g * 2 + c, y, z])) * Fraction(float(w[o, c, p, q]))
                        want[n, o, i, j] = round_fraction(acc, d)
        out.append(exact_case([(x, d), (w, d)], {"@conv": (stride, pad, dil, groups)}, want.astype(NP[d]), d))
    return out


# --- composites against float64 computations
def rounded_close(name, ref64, d, limit=0.5 + 1.0 / 1024):
    return lambda outs: compare_ulp(decode(outs[0]), ref64, d, limit if d != "f64" else 4.0)


@check("softmax")
def _softmax(dtypes):
    out = []
    for d in dtypes:
        if d not in FLOATS:
            continue
        x = RNG.standard_normal((3, 7)).astype(NP[d]) * 3
        x64 = x.astype(np.float64)
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        ref = e / e.sum(axis=1, keepdims=True)
        out.append(([(x, d)], {"dim": 1}, rounded_close("softmax", ref, d)))
    return out


@check("relu")
def _relu(dtypes):
    out = []
    for d in dtypes:
        if is_float(d):
            x = floats_in(d, -10, 10)
            want = np.where(np.isnan(x.astype(np.float64)), x.astype(np.float64),
                            np.maximum(x.astype(np.float64), 0.0)).astype(NP[d])
            out.append(exact_case([(x, d)], {}, want, d))
        elif is_int(d):
            x = ints_in(d)
            out.append(exact_case([(x, d)], {}, np.maximum(x, 0), d))
    return out


# ---------------------------------------------------------------------------------------------------------

# Placeholder attribute keys ("@name") used by checks whose attribute names vary between table revisions:
# each maps to candidate names; the first the op declares is used.
ATTR_CANDIDATES = {
    "@perm": ["permutation", "perm", "dims"],
    "@start": ["start_indices", "start", "starts"],
    "@limit": ["limit_indices", "limit", "limits", "end", "ends", "stop"],
    "@step": ["strides", "steps", "step"],
    "@low": ["low", "padding_low", "pad_low", "lo", "before"],
    "@high": ["high", "padding_high", "pad_high", "hi", "after"],
}


def resolve_attrs(op, attrs, declared):
    """Turns placeholder keys into the op's attribute names; returns None if the op lacks one."""
    out = {}
    for k, v in attrs.items():
        if k == "@iota":
            d, n = v
            out["dtype"] = d
            for name, val in (("shape", [n]), ("length", n), ("n", n), ("size", n)):
                if name in declared:
                    out[name] = val
                    break
            else:
                return None
            continue
        if k == "@conv":
            stride, pad, dil, groups = v
            for cands, val in ((["stride", "strides", "window_strides"], stride),
                               (["dilation", "dilations", "rhs_dilation"], dil),
                               (["groups", "feature_group_count"], groups)):
                name = next((c for c in cands if c in declared), None)
                if name is None:
                    return None
                out[name] = val
            if "padding" in declared:
                out["padding"] = pad
            elif "padding_low" in declared and "padding_high" in declared:
                out["padding_low"], out["padding_high"] = pad, pad
            else:
                return None
            continue
        if k.startswith("@"):
            name = next((c for c in ATTR_CANDIDATES[k] if c in declared), None)
            if name is None:
                return None
            out[name] = v
        elif k in declared:
            out[k] = v
        else:
            return None
    return out


def load_table():
    with open(TABLE, encoding="utf-8") as f:
        table = yaml.safe_load(f)
    groups = table["dtype_groups"]
    names = [d["name"] for d in table["dtypes"]]
    ops = {}
    for op in table["ops"]:
        admitted = set()
        for spec in (op.get("types") or {}).values():
            specs = spec if isinstance(spec, list) else [spec]
            for s in specs:
                admitted.update(groups.get(s, [s] if s in names else []))
        if not op.get("types"):
            admitted = set(names)
        ops[op["name"]] = (sorted(admitted, key=names.index), [a["name"] for a in op.get("attrs") or []])
    return ops


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True, help="path of primkit_oracle_dump")
    ap.add_argument("--only", default="", help="comma-separated op names")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    table = load_table()
    only = set(filter(None, args.only.split(",")))
    cases = []  # (op, dtypes text, request, compare)
    skipped = {}
    for op, (dtypes, declared) in table.items():
        if op not in CHECKS or (only and op not in only):
            continue
        for inputs, attrs, cmp in CHECKS[op](dtypes):
            label = ",".join(d for _, d in inputs) or str(attrs.get("dtype", ""))
            resolved = resolve_attrs(op, attrs, declared)
            if resolved is None:
                skipped[op] = "attributes %s do not match the table's %s" % (sorted(attrs), declared)
                continue
            attrs = resolved
            cases.append((op, label, attrs, request_text(op, inputs, attrs), cmp))
    text = "".join(c[3] for c in cases)
    proc = subprocess.run([args.dump], input=text, capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stderr)
        sys.exit("primkit_oracle_dump failed with exit code %d" % proc.returncode)
    results = parse_outputs(proc.stdout)
    if len(results) != len(cases):
        sys.exit("expected %d results, got %d" % (len(cases), len(results)))
    failures, checked, unimpl = [], {}, {}
    for (op, label, attrs, _, cmp), res in zip(cases, results):
        if res["status"] == "PK_UNIMPLEMENTED":
            unimpl.setdefault(op, []).append(label + ": " + res["message"])
            continue
        if res["status"] != "OK":
            failures.append("%s(%s) %s: status %s %s" % (op, label, attrs, res["status"], res["message"]))
            continue
        try:
            bad = cmp(res["outputs"])
        except Exception as e:  # a comparison that cannot run is a failure too
            bad = ["comparison raised %r" % e]
        checked.setdefault(op, 0)
        checked[op] += 1
        if bad:
            failures.append("%s(%s) %s: %d mismatches: %s" % (op, label, attrs, len(bad), "; ".join(bad[:6])))
    print("oracle vs numpy/ml_dtypes/fractions: %d ops checked (%d cases)" % (len(checked), sum(checked.values())))
    print("checked: " + ", ".join(sorted(checked)))
    no_ref = sorted(set(table) - set(CHECKS))
    print("ops without an independent reference here (%d): %s" % (len(no_ref), ", ".join(no_ref)))
    if skipped:
        print("skipped (the check's attributes do not fit the table): " + "; ".join(
            "%s: %s" % kv for kv in sorted(skipped.items())))
    if unimpl:
        print("oracle answered PK_UNIMPLEMENTED for: " + "; ".join(
            "%s (%s)" % (op, v[0]) for op, v in sorted(unimpl.items())))
    if failures:
        print("\n%d FAILURES:" % len(failures))
        for f in failures:
            print("  " + f)
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
