#!/usr/bin/env python3
"""Checks the PrimKit oracle against independent references: numpy, ml_dtypes, Python's math module, exact
rational arithmetic (fractions.Fraction) and, when it is installed, mpmath (128-bit and wider evaluations of the
transcendental and special functions; the checks that need it are listed as skipped without it).

    test_oracle_numpy.py --dump path/to/primkit_oracle_dump [--verbose] [--only op,op] [--seed N]

For every op of the op table that has a reference below, it generates seeded sample inputs for each dtype the
reference covers, evaluates them all with primkit_oracle_dump (one process, one batch) and compares:
  * exact ops (integer arithmetic, comparisons, data movement, conversions, + - * / sqrt, ...): bit for bit
    (any NaN matches any NaN);
  * transcendental functions: the oracle's rounded result within 0.5 + 1/1024 ULP of the float64 reference
    (essentially correctly rounded) for f32 and narrower, and within 4 ULP for f64 (numpy's own accuracy);
    with mpmath, within 1 ULP of the exact value for f64 (the oracle's documented f64 gap) and 0.5 + 1/1024
    ULP for narrower formats;
  * sums, products, dot products: bit for bit against the exact rational result rounded once with an
    independent rounding routine written here.
It prints the ops checked and fails listing every mismatch.
"""
import argparse
import decimal
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
DEC60 = decimal.Context(prec=60, Emin=-999999, Emax=999999)  # ~200 bits: an exact reference for exp/ln sums


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
    if d in ("c64", "c128"):  # parts from the float specials, so that zero, NaN and inf parts occur
        part = "f32" if d == "c64" else "f64"
        z = np.empty(len(floats_in(part, -100, 100, n)), NP[d])
        z.real = floats_in(part, -100, 100, n)
        z.imag = np.roll(floats_in(part, -100, 100, n), 5)  # not re + 1j * im: 1j * inf has a NaN real part
        z.imag[: len(z) // 4] = 0.0  # some purely real values, zero among them
        return z
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
            # the table: sign(+-0) is the zero itself, keeping its sign (np.sign(-0.0) is +0)
            out.append(exact_case([(x, d)], {}, np.where(x == 0, x, np.sign(x)), d))
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
            # the table counts the bits of the two's-complement pattern; np.bitwise_count counts those of |x|
            bits = x.view(UINT[x.dtype.itemsize])
            out.append(exact_case([(x, d)], {}, np.bitwise_count(bits).astype(NP[d]), d))
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
        "acosh": m.acosh, "atanh": m.atanh, "erf": m.erf, "erfc": m.erfc, "lgamma": lg,
        "cbrt": lambda x: m.sign(x) * m.cbrt(abs(x)),  # the real cube root (mpmath's is the principal one)
        "rsqrt": lambda x: 1 / m.sqrt(x), "sigmoid": lambda x: 1 / (1 + m.exp(-x)),
        "logistic": lambda x: 1 / (1 + m.exp(-x)), "digamma": m.digamma, "erfinv": m.erfinv,
    }


MP = _mp_table()
NO_MPMATH = set()  # checks skipped because mpmath is missing (reported by main)


def mp_fraction(v):
    """A finite mpf as an exact Fraction, with its sign (mpf.man_exp drops the sign)."""
    sign, man, exp, _ = v._mpf_
    f = Fraction(int(man)) * Fraction(2) ** int(exp)
    return -f if sign else f


def compare_ulp_mp(got, x, fn, d, limit, floor=0.0):
    """Like compare_ulp, against fn evaluated with mpmath at 128 bits on each input x (errors in ulps of
    max(|value|, floor))."""
    bad = []
    for i, (g, xv) in enumerate(zip(np.asarray(got).reshape(-1), np.asarray(x, np.float64).reshape(-1))):
        g, xv = float(np.float64(g)), float(xv)
        if not math.isfinite(xv) or xv == 0:
            continue  # special inputs (and signed zeros) are covered by the float64 comparison
        try:
            r = fn(mpmath.mpf(xv))
        except (ValueError, ZeroDivisionError):
            r = mpmath.nan
        except OverflowError:  # mpmath itself fails (erfc of ~1e308): the float64 comparison still covers x
            continue
        if isinstance(r, mpmath.mpc) or mpmath.isnan(r):
            if not math.isnan(g):
                bad.append("[%d] x=%r got %r want nan" % (i, xv, g))
            continue
        if mpmath.isinf(r):
            rr = float(r)
        elif abs(r) >= 2 * mpmath.mpf(fmt_max(d).numerator) / fmt_max(d).denominator:  # overflows every rounding (and 2**exp below would not fit in memory)
            rr = math.copysign(math.inf if FMT[d][2] else math.nan, float(mpmath.sign(r)))
        elif abs(r) < mpmath.ldexp(1, -1100):  # underflows to zero in every format
            rr = math.copysign(0.0, float(mpmath.sign(r)))
        else:
            rr = round_fraction(mp_fraction(r), d)
        if math.isinf(rr) or math.isinf(g) or math.isnan(g) or math.isnan(rr):
            if not same_value(g, rr):
                bad.append("[%d] x=%r got %r want %s" % (i, xv, g, mpmath.nstr(r, 20)))
            continue
        u = ulp(max(abs(rr), floor), d)
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
                if mp_fn is not None and d == "f64":
                    # numpy / math are themselves off by several f64 ulp at times (math.lgamma(3.3771395057523876)
                    # by 6): with mpmath, they only judge the inputs mpmath skips (non-finite and zero)
                    keep = ~np.isfinite(x.astype(np.float64)) | (x.astype(np.float64) == 0)
                    bad = compare_ulp(got[keep], ref64[keep], d, limit, floor)
                else:
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
    """clamp(x, min=, max=): the bounds are attributes converted to x's dtype as convert_element_type does."""
    out = []
    for d in dtypes:
        if is_float(d):
            x = floats_in(d, -10, 10)
            bounds = ((-2.3, 3.7), (0.0, 1e30), (-math.inf, 0.5))
        elif is_int(d):
            x = ints_in(d)
            bounds = ((-5.5, 100.9), (-1e30, 1e30))  # ints: truncated and saturated
        else:
            continue
        for lo, hi in bounds:
            lo_d = convert_ref(np.array([lo], np.float64), "f64", d)[0]
            hi_d = convert_ref(np.array([hi], np.float64), "f64", d)[0]
            if is_int(d):  # in Python ints: i64 values do not fit a float64
                want = np.array([min(max(int(v), int(lo_d)), int(hi_d)) for v in x], np.int64)
            else:
                want = np.minimum(np.maximum(x.astype(np.float64), float(lo_d)), float(hi_d))  # NaN propagates
            out.append(exact_case([(x, d)], {"min": repr(lo), "max": repr(hi)}, want.astype(NP[d]), d))
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
            # "value converted to dtype" as convert_element_type converts an f64: one rounding; to e4m3fn
            # (no inf) a value beyond the range saturates to +-448
            sat = max(-448.0, min(448.0, v)) if d == "f8e4m3fn" else v
            want = np.array([round_fraction(Fraction(sat), d)] * 6, np.float64).astype(NP[d]).reshape(2, 3)
            out.append(exact_case([], {"shape": [2, 3], "value": repr(v), "dtype": d}, want, d))
    return out


@check("fill")
def _fill(dtypes):
    # a's shape and dtype, every element the value converted once (floats: one rounding, e4m3fn saturating;
    # integers: values they hold exactly; bool: nonzero is true); a's own values must not matter
    out = []
    for d in movement_dtypes(dtypes):
        a = movable(d, 6).reshape(2, 3)
        if is_float(d):
            for v in (0.1, -2.5, 1e10, 465.0):
                sat = max(-448.0, min(448.0, v)) if d == "f8e4m3fn" else v
                want = np.array([round_fraction(Fraction(sat), d)] * 6, np.float64).astype(NP[d]).reshape(2, 3)
                out.append(exact_case([(a, d)], {"value": repr(v)}, want, d))
        elif d == "bool":
            for v, want in ((2.5, True), (0.0, False)):
                out.append(exact_case([(a, d)], {"value": repr(v)}, np.full((2, 3), want, np.bool_), d))
        elif d not in ("c64", "c128"):
            for v in ((7.0, 0.0) if d == "u8" else (-7.0, 100.0)):
                out.append(exact_case([(a, d)], {"value": repr(v)}, np.full((2, 3), int(v), NP[d]), d))
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
        # to 60 digits with the decimal module: the float64 formula is itself off by up to ~7 f64 ulp
        exact = []
        with decimal.localcontext(DEC60):
            for row in x.astype(np.float64):
                e = [decimal.Decimal(float(v)).exp() for v in row]
                s = sum(e)
                exact += [Fraction(v / s) for v in e]
        out.append(([(x, d)], {"dim": 1}, lambda outs, exact=exact, d=d: compare_ulp_exact(
            decode(outs[0]), exact, d, 1.0 if d == "f64" else 0.5 + 1.0 / 1024)))
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


# --- ops added to the oracle with the table's names: exact references (Python integers, Fractions, numpy)
def compare_ulp_exact(got, exact, d, limit, floor=0.0):
    """got: rounded outputs of float dtype d; exact: their exact values as Fractions (or float inf/nan). Errors
    are measured in ULPs of d at max(|exact value|, floor), in exact arithmetic."""
    got = np.asarray(got).reshape(-1)
    bad = []
    for i, (g, x) in enumerate(zip(got, exact)):
        g = float(np.float64(g))
        if isinstance(x, float):  # nan or inf
            if not same_value(g, x):
                bad.append("[%d] got %r want %r" % (i, g, x))
            continue
        rr = round_fraction(x, d)
        if math.isinf(rr) or math.isinf(g) or math.isnan(g):
            if not same_value(g, rr):
                bad.append("[%d] got %r want %r" % (i, g, rr))
            continue
        err = abs(Fraction(g) - x) / Fraction(ulp(max(abs(rr), floor), d))
        if err > limit:
            bad.append("[%d] got %r want %r (%.4f ulp)" % (i, g, float(x), float(err)))
    return bad


def py_remainder(x, y):
    """Python-style modulus of exact values (the table's remainder): floor division, sign of y."""
    if y == 0:
        return 0
    return x - (x // y) * y


@check("remainder")
def _remainder(dtypes):
    out = []
    for d in dtypes:
        if is_int(d):
            a, b = ints_in(d), np.roll(ints_in(d), 5)
            want = np.array([wrap(py_remainder(int(x), int(y)), d) for x, y in zip(a, b)], np.int64)
            out.append(exact_case([(a, d), (b, d)], {}, want, d))
        elif is_float(d):
            a, b = binary_inputs(d)
            want = []
            for x, y in zip(a.astype(np.float64), b.astype(np.float64)):
                x, y = float(x), float(y)
                if math.isnan(x) or math.isnan(y) or math.isinf(x) or y == 0:
                    want.append(math.nan)
                elif math.isinf(y):  # x - floor(x / y) * y: x itself, or y when the signs differ and x != 0
                    want.append(x if (x == 0 or (x > 0) == (y > 0)) else y)
                else:
                    r = Fraction(x) - math.floor(Fraction(x) / Fraction(y)) * Fraction(y)
                    want.append(math.copysign(0.0, y) if r == 0 else round_fraction(r, d))
            out.append(exact_case([(a, d), (b, d)], {}, np.array(want).astype(NP[d]), d))
    return out


@check("gcd")
def _gcd(dtypes):
    out = []
    for d in dtypes:
        if is_int(d):
            a, b = ints_in(d), np.roll(ints_in(d), 3)
            b[:4] = 0  # gcd(x, 0) = |x|, gcd(0, 0) = 0
            want = np.array([wrap(math.gcd(int(x), int(y)), d) for x, y in zip(a, b)], np.int64)
            out.append(exact_case([(a, d), (b, d)], {}, want, d))
    return out


@check("xor_sum")
def _xor_sum(dtypes):
    out = []
    for d in dtypes:
        if is_int(d):
            x = ints_in(d)[:40].reshape(4, 10)
            for dims in ([1], [0, 1]):
                want = np.bitwise_xor.reduce(x.reshape(4, 10) if dims == [1] else x.reshape(-1), axis=-1)
                out.append(exact_case([(x, d)], {"dims": dims}, want, d))
        elif d == "bool":
            x = RNG.integers(0, 2, 24).astype(np.bool_).reshape(4, 6)
            out.append(exact_case([(x, d)], {"dims": [1]}, np.logical_xor.reduce(x, axis=1), d))
    return out


@check("var")
def _var(dtypes):
    out = []
    for d in dtypes:
        if d not in FLOATS + ["c64", "c128"]:
            continue
        cplx = d in ("c64", "c128")
        part = {"c64": "f32", "c128": "f64"}.get(d, d)
        shape = (3, 7)
        if cplx:
            x = (RNG.standard_normal(shape) * 3 + 1j * RNG.standard_normal(shape)).astype(NP[d])
        else:
            x = (RNG.standard_normal(shape) * 3 + 100).astype(NP[d])  # an offset mean: cancellation matters
        for correction in (1.0, 0.0, 7.0):
            exact = []
            for row in x:
                vals = [(Fraction(float(v.real)), Fraction(float(v.imag))) if cplx
                        else (Fraction(float(v)), Fraction(0)) for v in row]
                n = len(vals)
                if n - Fraction(correction) <= 0:
                    exact.append(math.nan)
                    continue
                mr = sum(v[0] for v in vals) / Fraction(n)
                mi = sum(v[1] for v in vals) / Fraction(n)
                ss = sum((v[0] - mr) ** 2 + (v[1] - mi) ** 2 for v in vals)
                exact.append(ss / (n - Fraction(correction)))

            # the oracle's variance is within a few 2^-64 relative: correctly rounded but for the documented
            # f64 gap (a value within ~2^-62 of an f64 rounding boundary)
            def cmp(outs, exact=exact, part=part):
                return compare_ulp_exact(decode(outs[0]), exact, part, 0.5 + (1.0 / 256 if part == "f64" else 0))
            out.append(([(x, d)], {"dims": [1], "correction": repr(correction)}, cmp))
    return out


def exact_dot_general(a, b, lb, rb, lc, rc, d):
    """numpy einsum over object arrays of Fractions (exact), then one rounding per element."""
    letters = "abcdefghijklmnop"
    la, lb_ = [None] * a.ndim, [None] * b.ndim
    it = iter(letters)
    for x, y in zip(lb, rb):
        la[x] = lb_[y] = next(it)
    for x, y in zip(lc, rc):
        la[x] = lb_[y] = next(it)
    for k in range(a.ndim):
        la[k] = la[k] or next(it)
    for k in range(b.ndim):
        lb_[k] = lb_[k] or next(it)
    out = [la[x] for x in lb] + [la[k] for k in range(a.ndim) if k not in lb and k not in lc] + \
          [lb_[k] for k in range(b.ndim) if k not in rb and k not in rc]
    fa = np.vectorize(lambda v: Fraction(float(v)), otypes=[object])(a)
    fb = np.vectorize(lambda v: Fraction(float(v)), otypes=[object])(b)
    r = np.einsum("%s,%s->%s" % ("".join(la), "".join(lb_), "".join(out)), fa, fb, optimize=False)
    r = np.asarray(r, dtype=object)
    return np.vectorize(lambda v: round_fraction(v, d), otypes=[np.float64])(r).astype(NP[d])


@check("dot_general")
def _dot_general(dtypes):
    out = []
    for d in dtypes:
        if d not in ("f32", "f64", "bf16"):
            continue
        configs = (((2, 3, 4), (2, 4, 5), [0], [0], [2], [1]),  # batched matmul
                   ((3, 4), (5, 4), [], [], [1], [1]),  # a @ b^T
                   ((4, 2, 3), (3, 4), [], [], [0, 2], [1, 0]),  # two contracting axes
                   ((3,), (3,), [], [], [0], [0]),  # a dot product
                   ((2, 3), (4,), [], [], [], []))  # an outer product
        for sa, sb, lb, rb, lc, rc in configs:
            a = RNG.standard_normal(sa).astype(NP[d])
            b = RNG.standard_normal(sb).astype(NP[d])
            want = exact_dot_general(a, b, lb, rb, lc, rc, d)
            attrs = {"lhs_batch": lb, "rhs_batch": rb, "lhs_contract": lc, "rhs_contract": rc}
            out.append(exact_case([(a, d), (b, d)], attrs, want, d))
    return out


@check("batch_matmul")
def _batch_matmul(dtypes):
    out = []
    for d in dtypes:
        if d in ("f32", "f64"):
            a = RNG.standard_normal((2, 3, 4)).astype(NP[d])
            b = RNG.standard_normal((2, 4, 5)).astype(NP[d])
            out.append(exact_case([(a, d), (b, d)], {}, exact_dot_general(a, b, [0], [0], [2], [1], d), d))
        elif d in ("i32", "i8"):
            a = RNG.integers(-100, 100, (2, 3, 4)).astype(NP[d])
            b = RNG.integers(-100, 100, (2, 4, 5)).astype(NP[d])
            want = np.array([[[wrap(sum(int(a[t, i, k]) * int(b[t, k, j]) for k in range(4)), d) for j in range(5)]
                              for i in range(3)] for t in range(2)])
            out.append(exact_case([(a, d), (b, d)], {}, want, d))
    return out


@check("slice_in_dim")
def _slice_in_dim(dtypes):
    out = []
    for d in movement_dtypes(dtypes):
        x = movable(d, 30).reshape(5, 6)
        out.append(exact_case([(x, d)], {"start": 1, "limit": 6, "stride": 2, "dim": 1}, x[:, 1:6:2], d))
        out.append(exact_case([(x, d)], {"start": 2, "limit": 2, "stride": 1, "dim": 0}, x[2:2, :], d))
    return out


def finite_extremes(d):
    if d == "bool":
        return 1, 0
    if is_int(d):
        return int(np.iinfo(NP[d]).max), int(np.iinfo(NP[d]).min)
    big = float(ml_dtypes.finfo(NP[d]).max)  # ml_dtypes' finfo covers numpy's float types too
    return big, -big


def make_extreme_value(name):
    def cases(dtypes):
        out = []
        for d in dtypes:
            if d in ("c64", "c128"):  # numpy's finfo of a complex type is that of its parts: (max, +0i)
                big = float(np.finfo(NP[d]).max)
                hi, lo = big, -big
            else:
                hi, lo = finite_extremes(d)
            want = np.array(hi if name == "maximum_value" else lo).astype(NP[d])
            out.append(exact_case([], {"dtype": d}, want, d))
        return out
    return cases


for _n in ("maximum_value", "minimum_value"):
    CHECKS[_n] = make_extreme_value(_n)


@check("scalar_tensor")
def _scalar_tensor(dtypes):
    out = []
    for d in ("f16", "bf16", "f32", "f64", "f8e5m2", "i32", "u8"):
        for v in (0.1, -2.5, 65520.0, 1e-8, -7.9):
            if is_float(d):
                want = np.array(round_fraction(Fraction(v), d)).astype(NP[d])
            else:
                want = convert_ref(np.array([v]), "f64", d).reshape(())
            out.append(exact_case([], {"value": repr(v), "dtype": d}, want, d))
    return out


@check("complex")
def _complex(dtypes):
    out = []
    for d in dtypes:
        if d in ("f32", "f64"):
            a, b = binary_inputs(d)
            z = np.empty(a.shape, {"f32": np.complex64, "f64": np.complex128}[d])
            z.real, z.imag = a, b
            out.append(exact_case([(a, d), (b, d)], {}, z, {"f32": "c64", "f64": "c128"}[d]))
    return out


@check("conj_physical")
def _conj_physical(dtypes):
    out = []
    for d in dtypes:
        if d in ("c64", "c128"):
            x = any_in(d)
            out.append(exact_case([(x, d)], {}, np.conj(x), d))
    return out


@check("copy_to")
def _copy_to(dtypes):
    out = []
    for d in movement_dtypes(dtypes):
        a, b = movable(d, 12).reshape(3, 4), movable(d, 12).reshape(3, 4)
        out.append(exact_case([(a, d), (b, d)], {}, b, d))
    return out


@check("polar")
def _polar(dtypes):
    out = []
    if mpmath is None:
        NO_MPMATH.add("polar")
        return out
    for d in dtypes:
        if d not in ("f32", "f64"):
            continue
        r = floats_in(d, 0, 100, with_specials=False)
        t = floats_in(d, -10, 10, with_specials=False)

        def cmp(outs, r=r, t=t, d=d):
            got = decode(outs[0])
            bad = []
            for part, fn in (("re", mpmath.cos), ("im", mpmath.sin)):
                g = got.real if part == "re" else got.imag
                exact = []
                for rv, tv in zip(r.astype(np.float64), t.astype(np.float64)):
                    exact.append(mp_fraction(mpmath.mpf(float(rv)) * fn(mpmath.mpf(float(tv)))))
                # a product of two long double roundings: correctly rounded but for the documented f64 gap
                bad += [part + " " + b for b in compare_ulp_exact(g, exact, d, 0.5 + (1.0 / 1024 if d == "f32"
                                                                                       else 0.5))]
            return bad
        out.append(([(r, d), (t, d)], {}, cmp))
    return out


@check("erf_inv")
def _erf_inv(dtypes):
    out = []
    if mpmath is None:
        NO_MPMATH.add("erf_inv")
        return out
    for d in dtypes:
        if d not in FLOATS:
            continue
        x = np.concatenate([floats_in(d, -1, 1, n=64),
                            np.array([0.999, -0.9999, 1e-5, 0.5, -0.5, 1.5, -2.0], np.float64).astype(NP[d])])
        specials_want = {1.0: math.inf, -1.0: -math.inf}

        def cmp(outs, x=x, d=d):
            got = decode(outs[0])
            bad = []
            for i, (g, xv) in enumerate(zip(got.astype(np.float64), x.astype(np.float64))):
                xv, g = float(xv), float(g)
                if math.isnan(xv) or abs(xv) > 1:
                    if not math.isnan(g):
                        bad.append("[%d] x=%r got %r want nan" % (i, xv, g))
                elif xv in specials_want or xv == 0:
                    if not same_value(g, specials_want.get(xv, xv)):
                        bad.append("[%d] x=%r got %r" % (i, xv, g))
            bad += compare_ulp_mp(got, x, lambda v: mpmath.erfinv(v) if abs(v) <= 1 else mpmath.nan, d,
                                  1.0 if d == "f64" else 0.5 + 1.0 / 1024)
            return bad
        out.append(([(x, d)], {}, cmp))
    return out


@check("fft_c2c")
def _fft_c2c(dtypes):
    """Against the DFT evaluated in mpmath at 128 bits over each axis in turn (exact twiddles, no scaling)."""
    out = []
    if mpmath is None:
        NO_MPMATH.add("fft_c2c")
        return out
    for d in dtypes:
        if d not in ("c64", "c128"):
            continue
        part = "f32" if d == "c64" else "f64"
        for shape, dims, forward in (((2, 12), [1], True), ((3, 5), [0, 1], False), ((4, 3), [0], True)):
            x = (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(NP[d])
            ref = np.vectorize(lambda z: mpmath.mpc(float(z.real), float(z.imag)), otypes=[object])(x)
            for ax in dims:
                n = shape[ax]
                sign = -1 if forward else 1
                w = [mpmath.expj(sign * 2 * mpmath.pi * k / n) for k in range(n)]
                moved = np.moveaxis(ref, ax, -1)
                res = np.empty_like(moved)
                for idx in np.ndindex(moved.shape[:-1]):
                    for k in range(n):
                        res[idx + (k,)] = mpmath.fsum(moved[idx + (j,)] * w[(k * j) % n] for j in range(n))
                ref = np.moveaxis(res, -1, ax)
            flat = ref.reshape(-1)
            scale = max(abs(z) for z in flat)
            floor = float(scale)

            def cmp(outs, flat=flat, part=part, floor=floor):
                # errors in ulps of the largest output: an FFT is accurate relative to the transform's norm
                got = decode(outs[0]).reshape(-1)
                bad = compare_ulp_exact(got.real, [mp_fraction(z.real) for z in flat], part, 0.5 + 1.0 / 64, floor)
                bad += compare_ulp_exact(got.imag, [mp_fraction(z.imag) for z in flat], part, 0.5 + 1.0 / 64, floor)
                return bad
            out.append(([(x, d)], {"dims": dims, "forward": forward}, cmp))
    return out


@check("spherical_bessel_j0")
def _spherical_bessel_j0(dtypes):
    out = []
    if mpmath is None:
        NO_MPMATH.add("spherical_bessel_j0")
        return out
    for d in dtypes:
        if d not in FLOATS:
            continue
        x = floats_in(d, -30, 30, n=64)

        def cmp(outs, x=x, d=d):
            got = decode(outs[0])
            bad = []
            for i, (g, xv) in enumerate(zip(got.astype(np.float64), x.astype(np.float64))):
                want = {0.0: 1.0, math.inf: 0.0, -math.inf: 0.0}.get(float(xv), None)
                if math.isnan(xv):
                    want = math.nan
                if want is not None and not same_value(g, want):
                    bad.append("[%d] x=%r got %r want %r" % (i, xv, g, want))
            return bad + compare_ulp_mp(got, x, lambda v: mpmath.sin(v) / v, d, 1.0 if d == "f64" else 0.5 + 1.0 / 1024)
        out.append(([(x, d)], {}, cmp))
    return out


# --- scans, scatters and gathers with the table's edge rules
@check("cumprod")
def _cumprod(dtypes):
    out = []
    for d in dtypes:
        if d in ("f32", "f64", "f16"):
            x = RNG.uniform(0.5, 2, 30).astype(NP[d]).reshape(3, 10)
            exact = []
            for row in x:
                p = Fraction(1)
                for v in row:
                    p *= Fraction(float(v))
                    exact.append(p)
            # long double products: n roundings of 2^-64 each (the documented prod gap), far below 1/1024 ulp
            out.append(([(x, d)], {"dim": 1}, lambda outs, exact=exact, d=d: compare_ulp_exact(
                decode(outs[0]), exact, d, 0.5 + 1.0 / 1024)))
        elif is_int(d):
            x = RNG.integers(-5, 6, 30).astype(NP[d]).reshape(3, 10)
            want = []
            for row in x:
                p = 1
                for v in row:
                    p *= int(v)
                    want.append(wrap(p, d))
            out.append(exact_case([(x, d)], {"dim": 1}, np.array(want).reshape(3, 10), d))
    return out


def running_extreme_ref(row, largest):
    """PyTorch's cummax / cummin: NaN always replaces, ties (>=, <=) move to the later element."""
    vals, idxs, m, at = [], [], None, 0
    for k, x in enumerate(row):
        if k == 0 or math.isnan(x) or (not math.isnan(m) and (x >= m if largest else x <= m)):
            m, at = x, k
        vals.append(m)
        idxs.append(at)
    return vals, idxs


def make_running_extreme(name):
    def cases(dtypes):
        out = []
        for d in dtypes:
            if not (is_float(d) or is_int(d)):
                continue
            x = RNG.integers(-3, 4, 40).astype(np.float64)
            if is_float(d):
                x[[5, 23]] = np.nan
                x[[30, 31, 32]] = [0.0, -0.0, 0.0]
            x = x.astype(NP[d]).reshape(4, 10)
            vals, idxs = [], []
            for row in x.astype(np.float64) if is_float(d) else x.astype(np.int64):
                v, i = running_extreme_ref([float(t) if is_float(d) else int(t) for t in row], name == "cummax")
                vals.append(v)
                idxs.append(i)
            wv, wi = np.array(vals).astype(NP[d]), np.array(idxs, np.int64)
            out.append(([(x, d)], {"dim": 1}, lambda outs, wv=wv, wi=wi, d=d: compare_exact(
                decode(outs[0]), wv, d) + ["indices " + b for b in compare_exact(decode(outs[1]), wi, "i64")]))
        return out
    return cases


for _n in ("cummax", "cummin"):
    CHECKS[_n] = make_running_extreme(_n)


@check("scatter")
def _scatter(dtypes):
    out = []
    for d in movement_dtypes(dtypes):
        a = movable(d, 12).reshape(3, 4)
        src = movable(d, 8).reshape(2, 4)
        idx = np.array([[0, 2, 5, 1], [1, -1, 2, 3]], np.int64)  # distinct per column; 5, -1 and 3 are skipped
        want = a.copy()
        for r in range(2):
            for j in range(4):
                if 0 <= idx[r, j] < 3:
                    want[idx[r, j], j] = src[r, j]
        out.append(exact_case([(a, d), (idx, "i64"), (src, d)], {"dim": 0}, want, d))
    return out


@check("scatter_reduce")
def _scatter_reduce(dtypes):
    out = []
    for d in dtypes:
        if d not in ("f32", "f64", "i32", "i64", "i8"):
            continue
        a = movable(d, 12).reshape(3, 4)
        src = movable(d, 20).reshape(5, 4)
        idx = RNG.integers(-1, 4, (5, 4)).astype(np.int64)  # -1 and 3 are out of range: skipped
        for kind in ("sum", "prod", "amax", "amin"):
            for include_self in (True, False):
                want = np.zeros((3, 4), np.float64 if is_float(d) else np.int64)
                for i in range(3):
                    for j in range(4):
                        terms = [src[r, j] for r in range(5) if idx[r, j] == i]
                        if not terms:
                            want[i, j] = a[i, j]
                            continue
                        if include_self:
                            terms = [a[i, j]] + terms
                        if is_float(d):
                            fr = [Fraction(float(t)) for t in terms]
                            if kind == "sum":
                                v = round_fraction(sum(fr, Fraction(0)), d)
                            elif kind == "prod":
                                p = Fraction(1)
                                for t in fr:
                                    p *= t
                                v = round_fraction(p, d)
                            else:
                                v = float(max(fr) if kind == "amax" else min(fr))
                        else:
                            ti = [int(t) for t in terms]
                            v = wrap(sum(ti) if kind == "sum" else (math.prod(ti) if kind == "prod" else
                                                                     (max(ti) if kind == "amax" else min(ti))), d)
                        want[i, j] = v
                out.append(exact_case([(a, d), (idx, "i64"), (src, d)],
                                      {"dim": 0, "reduce": kind, "include_self": include_self},
                                      want.astype(NP[d]) if is_float(d) else want, d))
    return out


@check("gather")
def _gather(dtypes):
    out = []
    for d in movement_dtypes(dtypes):
        x = movable(d, 12).reshape(3, 4)
        idx = RNG.integers(-1, 4, (5, 4)).astype(np.int64)  # -1 and 3 are outside [0, 3): they yield 0
        want = np.take_along_axis(x, np.clip(idx, 0, 2), 0)
        want = np.where((idx >= 0) & (idx < 3), want, np.zeros_like(want))
        out.append(exact_case([(x, d), (idx, "i64")], {"dim": 0}, want, d))
    return out


@check("index_select")
def _index_select(dtypes):
    out = []
    for d in movement_dtypes(dtypes):
        x = movable(d, 12).reshape(3, 4)
        idx = np.array([3, 0, 0, 2, 1, 4, -1], np.int64)  # 4 and -1 are outside [0, 4): they yield 0
        want = np.take(x, np.clip(idx, 0, 3), 1)
        want[:, 5:] = np.zeros_like(want[:, 5:])
        out.append(exact_case([(x, d), (idx, "i64")], {"dim": 1}, want, d))
    return out


@check("angle")
def _angle(dtypes):
    out = []
    for d in dtypes:
        if d in ("f32", "f64"):
            x = floats_in(d, -10, 10)
            x64 = x.astype(np.float64)
            # the table: 0, or pi if a < 0 (so -0 gives 0, where np.angle(-0.0) gives pi); NaN stays NaN
            want = np.where(np.isnan(x64), x64, np.where(x64 < 0, np.pi, 0.0)).astype(NP[d])
            out.append(exact_case([(x, d)], {}, want, d))
        elif d in ("c64", "c128"):
            x = any_in(d)
            part = "f32" if d == "c64" else "f64"
            ref = np.arctan2(x.imag.astype(np.float64), x.real.astype(np.float64))  # correctly rounded in f64
            out.append(([(x, d)], {}, lambda outs, ref=ref, part=part: compare_ulp(
                decode(outs[0]), ref, part, 0.5 + 1.0 / 1024 if part == "f32" else 1.0)))
    return out


def make_part(name):
    def cases(dtypes):
        out = []
        for d in dtypes:
            if d in ("c64", "c128"):
                x = any_in(d)
                out.append(exact_case([(x, d)], {}, x.real if name == "real" else x.imag,
                                      "f32" if d == "c64" else "f64"))
        return out
    return cases


for _n in ("real", "imag"):
    CHECKS[_n] = make_part(_n)


@check("count_leading_zeros")
def _clz(dtypes):
    out = []
    for d in dtypes:
        if is_int(d):
            x = ints_in(d)
            bits = BITS[d]
            want = [bits - (int(v) & ((1 << bits) - 1)).bit_length() for v in x]
            out.append(exact_case([(x, d)], {}, np.array(want).astype(NP[d]), d))
    return out


@check("digamma")
def _digamma(dtypes):
    out = []
    if mpmath is None:
        NO_MPMATH.add("digamma")
        return out
    for d in dtypes:
        if d not in FLOATS:
            continue
        x = np.concatenate([floats_in(d, -10, 30, n=64), np.array([-1.0, -2.0, 1.0, 2.0, 0.5, 1e-3], NP[d])])

        def cmp(outs, x=x, d=d):
            got = decode(outs[0])
            bad = []
            for i, (g, xv) in enumerate(zip(got.astype(np.float64), x.astype(np.float64))):
                g, xv = float(g), float(xv)
                # the table (as PyTorch): -inf at +0 (+inf at -0), NaN at negative integers and -inf, inf at inf
                want = None
                if xv == 0:
                    want = -math.inf if math.copysign(1, xv) > 0 else math.inf
                elif math.isnan(xv) or xv == -math.inf or (xv < 0 and xv == math.floor(xv)):
                    want = math.nan
                elif xv == math.inf:
                    want = math.inf
                if want is not None and not same_value(g, want):
                    bad.append("[%d] x=%r got %r want %r" % (i, xv, g, want))
            # mpmath's digamma near its negative poles loses relative accuracy only where the result is huge;
            # the oracle's reflection formula is accurate to a few 2^-64 there
            return bad + compare_ulp_mp(got, x, lambda v: mpmath.digamma(v) if not (v < 0 and v == mpmath.floor(v))
                                        else mpmath.nan, d, 1.0 if d == "f64" else 0.5 + 1.0 / 1024)
        out.append(([(x, d)], {}, cmp))
    return out


def make_reshape_like(name):
    def cases(dtypes):
        out = []
        for d in movement_dtypes(dtypes):
            x = movable(d, 24).reshape(2, 1, 3, 4)
            if name == "expand_dims":
                out.append(exact_case([(x, d)], {"dims": [0, 3]}, x.reshape(1, 2, 1, 1, 3, 4), d))
            elif name == "squeeze":
                out.append(exact_case([(x, d)], {"dims": [1]}, x.reshape(2, 3, 4), d))
            elif name == "collapse":
                out.append(exact_case([(x, d)], {"start": 1, "end": 3}, x.reshape(2, 3, 4), d))
            elif name == "split_dim":
                out.append(exact_case([(x, d)], {"dim": 3, "outer_length": 2}, x.reshape(2, 1, 3, 2, 2), d))
            else:
                out.append(exact_case([(x, d)], {}, x, d))
        return out
    return cases


for _n in ("expand_dims", "squeeze", "collapse", "split_dim", "clone"):
    CHECKS[_n] = make_reshape_like(_n)
# The aliasing forms give the same values as their copying twins.
CHECKS["collapse_view"] = make_reshape_like("collapse")
CHECKS["view_of"] = make_reshape_like("clone")


@check("mean")
def _mean(dtypes):
    out = []
    for d in dtypes:
        if d in FLOATS:
            x = (RNG.standard_normal((3, 7)) * 10).astype(NP[d])
            exact = [sum((Fraction(float(v)) for v in row), Fraction(0)) / 7 for row in x]
            out.append(([(x, d)], {"dims": [1]}, lambda outs, exact=exact, d=d: compare_ulp_exact(
                decode(outs[0]), exact, d, 0.5 + (1.0 / 256 if d == "f64" else 0))))
    return out


def make_log_reduction(name):
    def cases(dtypes):
        out = []
        for d in dtypes:
            if d not in FLOATS:
                continue
            x = (RNG.standard_normal((3, 7)) * 5).astype(NP[d])
            exact = []
            with decimal.localcontext(DEC60):  # 60-digit exp and ln (the decimal module is correctly rounded)
                for row in x.astype(np.float64):
                    lse = sum(decimal.Decimal(float(v)).exp() for v in row).ln()
                    if name == "logsumexp":
                        exact.append(Fraction(lse))
                    else:
                        exact += [Fraction(decimal.Decimal(float(v)) - lse) for v in row]
            attrs = {"dims": [1]} if name == "logsumexp" else {"dim": 1}
            out.append(([(x, d)], attrs, lambda outs, exact=exact, d=d: compare_ulp_exact(
                decode(outs[0]), exact, d, 1.0 if d == "f64" else 0.5 + 1.0 / 1024)))
        return out
    return cases


for _n in ("logsumexp", "log_softmax"):
    CHECKS[_n] = make_log_reduction(_n)


@check("argsort")
def _argsort(dtypes):
    out = []
    for d in dtypes:
        if not (is_float(d) or is_int(d)):
            continue
        x = RNG.integers(-4, 5, 40).astype(np.float64)
        if is_float(d):
            x[[3, 17]] = np.nan
        x = x.astype(NP[d]).reshape(4, 10)
        for desc in (False, True):
            want = []
            for row in x.astype(np.float64):
                key = [sort_key_nan_last(v) for v in row]
                want.append(sorted(range(10), key=lambda i: (tuple(-t for t in key[i]) if desc else key[i])))
            out.append(exact_case([(x, d)], {"dim": 1, "descending": desc}, np.array(want, np.int64), "i64"))
    return out


# --- special functions against mpmath (skipped, with a note, where mpmath is missing)
def ndtri_mp(v):
    """sqrt(2) erfinv(2v - 1) at 400 bits: 2v - 1 must be exact for tiny v (at 128 bits it is not, and erfinv
    near -1 then loses most of its digits)."""
    with mpmath.workprec(400):
        return +(mpmath.sqrt(2) * mpmath.erfinv(2 * v - 1))


SPECIAL_MP = {
    # name: (mpmath function of an mpf, input range, hand-checked specials {input: output})
    "erfcx": (lambda v: mpmath.exp(v * v) * mpmath.erfc(v), (-10, 60), {math.inf: 0.0, -math.inf: math.inf}),
    "ndtri": (lambda v: ndtri_mp(v) if 0 < v < 1 else
              (mpmath.nan if not 0 <= v <= 1 else (mpmath.inf if v == 1 else -mpmath.inf)), (0, 1),
              {0.0: -math.inf, 1.0: math.inf, 0.5: 0.0, 2.0: math.nan, -0.5: math.nan}),
    "bessel_i0": (lambda v: mpmath.besseli(0, v), (-60, 60), {math.inf: math.inf, -math.inf: math.inf, 0.0: 1.0}),
    "bessel_i0e": (lambda v: mpmath.exp(-abs(v)) * mpmath.besseli(0, v), (-300, 300),
                   {math.inf: 0.0, -math.inf: 0.0, 0.0: 1.0}),
    "bessel_i1": (lambda v: mpmath.besseli(1, v), (-60, 60), {math.inf: math.inf, -math.inf: -math.inf}),
    "bessel_i1e": (lambda v: mpmath.exp(-abs(v)) * mpmath.besseli(1, v), (-300, 300),
                   {math.inf: 0.0, -math.inf: -0.0}),
}


# Bessel J: the table allows an absolute error near the zeros, so errors are in ulps of max(|value|, 1/8)
SPECIAL_MP["bessel_j0"] = (lambda v: mpmath.besselj(0, v), (-60, 60), {math.inf: 0.0, -math.inf: 0.0, 0.0: 1.0})
SPECIAL_MP["bessel_j1"] = (lambda v: mpmath.besselj(1, v), (-60, 60), {math.inf: 0.0, -math.inf: -0.0, 0.0: 0.0})
SPECIAL_FLOOR = {"bessel_j0": 0.125, "bessel_j1": 0.125}


def make_special_mp(name, fn, rng_, specials_want):
    def cases(dtypes):
        out = []
        if mpmath is None:
            NO_MPMATH.add(name)
            return out
        for d in dtypes:
            if d not in FLOATS:
                continue
            lo, hi = rng_
            x = floats_in(d, lo, hi, n=64, with_specials=False)
            if name == "ndtri":  # the tails too: tiny probabilities and ones close to 1
                x = np.concatenate([x, np.exp(RNG.uniform(math.log(1e-30), 0, 16)).astype(NP[d]),
                                    (1 - np.exp(RNG.uniform(math.log(1e-7), 0, 8))).astype(NP[d])])
            sp = np.array(list(specials_want), np.float64).astype(NP[d])
            x = np.concatenate([sp, x])

            def cmp(outs, x=x, d=d, n_sp=len(sp)):
                got = decode(outs[0])
                bad = []
                for i, (g, xv) in enumerate(zip(got[:n_sp].astype(np.float64), x[:n_sp].astype(np.float64))):
                    if not same_value(float(g), specials_want[float(xv)]):
                        bad.append("[%d] x=%r got %r want %r" % (i, float(xv), float(g), specials_want[float(xv)]))
                return bad + compare_ulp_mp(got, x, fn, d, 1.0 if d == "f64" else 0.5 + 1.0 / 1024,
                                            SPECIAL_FLOOR.get(name, 0.0))
            out.append(([(x, d)], {}, cmp))
        return out
    return cases


for _n, (_f, _r, _s) in SPECIAL_MP.items():
    CHECKS[_n] = make_special_mp(_n, _f, _r, _s)


@check("logcumsumexp")
def _logcumsumexp(dtypes):
    out = []
    if mpmath is None:
        NO_MPMATH.add("logcumsumexp")
        return out
    for d in dtypes:
        if d not in FLOATS:
            continue
        x = (RNG.standard_normal((3, 8)) * 4).astype(NP[d])
        x[0, 0] = -np.inf  # a -inf term contributes nothing
        exact = []
        for row in x.astype(np.float64):
            for k in range(8):
                terms = [mpmath.exp(mpmath.mpf(float(v))) for v in row[:k + 1] if v != -math.inf]
                exact.append(mp_fraction(mpmath.log(mpmath.fsum(terms))) if terms else -math.inf)
        out.append(([(x, d)], {"dim": 1}, lambda outs, exact=exact, d=d: compare_ulp_exact(
            decode(outs[0]), exact, d, 1.0 if d == "f64" else 0.5 + 1.0 / 1024)))
    return out


@check("searchsorted")
def _searchsorted(dtypes):
    out = []
    for d in dtypes:
        if not (is_float(d) or is_int(d)):
            continue
        base = 0 if d == "u8" else -5  # an ascending sequence in the dtype's range
        seq = np.sort(RNG.integers(base, base + 11, 12)).astype(np.float64)
        vals = RNG.integers(base - 2, base + 13, 20).astype(np.float64)
        if is_float(d):
            seq = np.append(seq, np.nan)  # NaN sorts last
            vals = np.append(vals, [np.nan, -np.inf, -0.0])
        seq, vals = seq.astype(NP[d]), vals.astype(NP[d]).reshape(-1, 1)
        for right in (False, True):
            want = np.searchsorted(seq.astype(np.float64) if is_float(d) else seq,
                                   vals.astype(np.float64) if is_float(d) else vals, side="right" if right else "left")
            out.append(exact_case([(seq, d), (vals, d)], {"right": right}, want.astype(np.int64), "i64"))
    return out


@check("slice_scatter")
def _slice_scatter(dtypes):
    out = []
    for d in movement_dtypes(dtypes):
        a = movable(d, 24).reshape(4, 6)
        src = movable(d, 8).reshape(4, 2)
        want = a.copy()
        want[:, 1:5:3] = src
        out.append(exact_case([(a, d), (src, d)], {"dim": 1, "start": 1, "stride": 3}, want, d))
    return out


def make_as_strided(name):
    def cases(dtypes):
        out = []
        for d in movement_dtypes(dtypes):
            a = movable(d, 16).reshape(4, 4)
            view = np.lib.stride_tricks.as_strided(a.reshape(-1)[1:], shape=(3, 3),
                                                   strides=(4 * a.itemsize, a.itemsize))  # overlapping rows
            attrs = {"shape": [3, 3], "strides": [4, 1], "storage_offset": 1}
            if name == "as_strided":
                out.append(exact_case([(a, d)], attrs, view.copy(), d))
            else:
                src = movable(d, 6).reshape(3, 2)
                want = a.copy().reshape(-1)
                for i in range(3):
                    for j in range(2):
                        want[1 + 5 * i + 2 * j] = src[i, j]  # strides [5, 2]: no position repeats
                attrs = {"shape": [3, 2], "strides": [5, 2], "storage_offset": 1}
                out.append(exact_case([(a, d), (src, d)], attrs, want.reshape(4, 4), d))
        return out
    return cases


for _n in ("as_strided", "as_strided_scatter"):
    CHECKS[_n] = make_as_strided(_n)


@check("index_put")
def _index_put(dtypes):
    out = []
    for d in dtypes:
        if d not in ("f32", "f64", "i32", "i8"):
            continue
        a = movable(d, 12).reshape(4, 3)
        rows = np.array([2, 0, 7, 2, -1], np.int64)  # 7 and -1 are skipped; 2 repeats
        vals = movable(d, 15).reshape(5, 3)
        for accumulate in (False, True):
            if is_float(d):
                want = [[Fraction(float(v)) for v in r] for r in a]
            else:
                want = [[int(v) for v in r] for r in a]
            for l, r in enumerate(rows):
                if 0 <= r < 4:
                    for j in range(3):
                        v = Fraction(float(vals[l, j])) if is_float(d) else int(vals[l, j])
                        want[r][j] = want[r][j] + v if accumulate else v
            if is_float(d):
                w = np.array([[round_fraction(v, d) for v in r] for r in want]).astype(NP[d])
            else:
                w = np.array([[wrap(v, d) for v in r] for r in want])
            out.append(exact_case([(a, d), (vals, d), (rows, "i64")], {"accumulate": accumulate}, w, d))
    return out


def fft_ref_compare(got, ref, part):
    """Errors in ulps of the largest output: numpy's float64 FFT is accurate to ~1e-16 of the transform's norm."""
    floor = float(np.max(np.abs(ref))) if ref.size else 0.0
    limit = 0.5 + 1.0 / 1024 if part == "f32" else 4.0
    bad = compare_ulp(np.real(got), np.real(ref), part, limit, floor)
    if np.iscomplexobj(ref):
        bad += compare_ulp(np.imag(got), np.imag(ref), part, limit, floor)
    return bad


@check("fft_r2c")
def _fft_r2c(dtypes):
    out = []
    for d in dtypes:
        if d not in ("f32", "f64"):
            continue
        for shape, dims, onesided in (((3, 8), [1], True), ((4, 6), [0, 1], True), ((5, 3), [0], False)):
            x = RNG.standard_normal(shape).astype(NP[d])
            ref = np.fft.fftn(x.astype(np.float64), axes=dims)
            if onesided:
                sl = [slice(None)] * len(shape)
                sl[dims[-1]] = slice(0, shape[dims[-1]] // 2 + 1)
                ref = ref[tuple(sl)]
            out.append(([(x, d)], {"dims": dims, "onesided": onesided},
                        lambda outs, ref=ref, d=d: fft_ref_compare(decode(outs[0]), ref, d)))
    return out


@check("fft_c2r")
def _fft_c2r(dtypes):
    out = []
    for d in dtypes:
        if d not in ("c64", "c128"):
            continue
        part = "f32" if d == "c64" else "f64"
        for shape, dims, n in (((3, 5), [1], 8), ((4, 4), [0, 1], 7), ((2, 4), [1], 6)):
            x = (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(NP[d])
            # numpy normalizes irfftn by 1 / prod(n); the table's c2r is unnormalized
            sizes = [shape[k] for k in dims[:-1]] + [n]
            ref = np.fft.irfftn(x.astype(np.complex128), s=sizes, axes=dims) * float(np.prod(sizes))
            out.append(([(x, d)], {"dims": dims, "last_dim_size": n},
                        lambda outs, ref=ref, part=part: fft_ref_compare(decode(outs[0]), ref, part)))
    return out


# --- composites that the oracle runs through fill(), against float64 references
@check("silu")
def _silu(dtypes):
    out = []
    for d in dtypes:
        if d in ("f16", "bf16", "f32"):
            x = floats_in(d, -20, 20)
            x64 = x.astype(np.float64)
            ref = x64 / (1 + np.exp(-x64))  # the table's formula: NaN at -inf (-inf / inf), as in torch
            out.append(([(x, d)], {}, rounded_close("silu", ref, d)))
    return out


@check("tanhshrink")
def _tanhshrink(dtypes):
    """x - tanh(x) cancels for small |x| (the oracle sums its Taylor series there): magnitudes from 1e-30 to 30,
    both signs, against mpmath at 400 bits (the subtraction loses about log2(3 / x^2) bits: 200 at 1e-30)."""
    out = []
    if mpmath is None:
        NO_MPMATH.add("tanhshrink")
        return out

    def ref(v):
        with mpmath.workprec(400):
            return v - mpmath.tanh(v)

    for d in dtypes:
        if d not in FLOATS:
            continue
        lo = 1e-30 if d in ("f32", "f64") else 1e-3
        mags = floats_in("f64", lo, 30, n=96, log=True, with_specials=False).astype(np.float64)
        x = np.concatenate([[0.0, -0.0, math.inf, -math.inf, math.nan, 0.5, -0.5, 0.4375],
                            mags * np.where(RNG.integers(0, 2, mags.size) == 1, 1.0, -1.0),
                            RNG.uniform(-1, 1, 32)]).astype(NP[d])

        def cmp(outs, x=x, d=d):
            got = decode(outs[0]).astype(np.float64)
            bad = []
            for i, (g, xv) in enumerate(zip(got, x.astype(np.float64))):
                # the decomposition's special values: x - x = +0 at both zeros, inf - 1, NaN
                want = {0.0: 0.0, math.inf: math.inf, -math.inf: -math.inf}.get(float(xv), None)
                if math.isnan(xv):
                    want = math.nan
                if want is not None and not same_value(g, want):
                    bad.append("[%d] x=%r got %r want %r" % (i, xv, g, want))
            return bad + compare_ulp_mp(got, x, ref, d, 1.0 if d == "f64" else 0.5 + 1.0 / 1024)
        out.append(([(x, d)], {}, cmp))
    return out


@check("nan_to_num")
def _nan_to_num(dtypes):
    out = []
    for d in dtypes:
        if is_float(d):
            x = floats_in(d, -10, 10)
            hi, lo = finite_extremes(d)
            want = np.nan_to_num(x.astype(np.float64), nan=1.5, posinf=hi, neginf=lo).astype(NP[d])
            out.append(exact_case([(x, d)], {"nan_value": "1.5"}, want, d))
    return out


# --- counter-based RNG, against an independent Philox4x32-10 written here from the published algorithm (Salmon
# et al., SC'11; numpy's np.random.Philox is the 4x64 variant and exposes no raw 4x32 block, so it cannot serve).
# The table's mapping: element i uses the block at the 64-bit counter c = offset + i // 4 (mod 2^64) in counter words
# (c & 0xffffffff, c >> 32, 0, 0) and key words (seed & 0xffffffff, (seed mod 2^64) >> 32); word i % 4.
M32 = 0xFFFFFFFF


def philox4x32_10(ctr, key):
    """Ten rounds; each multiplies words 0 and 2 by the round multipliers (64-bit products split hi/lo), permutes
    and mixes in the key; the key is bumped by the Weyl constants between rounds."""
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for rnd in range(10):
        if rnd:
            k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & M32, (p0 >> 32) ^ c3 ^ k1, p0 & M32
    return c0, c1, c2, c3


# Random123's known-answer vectors (kat_vectors, philox4x32_10): the Python generator must reproduce them before
# it may judge the oracle.
assert philox4x32_10((0, 0, 0, 0), (0, 0)) == (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)
assert philox4x32_10((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0)) == \
    (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)


def philox_words(n, seed, offset):
    """The Philox word of each element 0 .. n-1 (row-major) under the table's counter / key mapping."""
    k = seed % (1 << 64)
    out = []
    for i in range(n):
        if i % 4 == 0:
            c = (offset + i // 4) % (1 << 64)
            block = philox4x32_10((c & M32, c >> 32, 0, 0), (k & M32, k >> 32))
        out.append(block[i % 4])
    return out


def round_down_fraction(x, d):
    """Exact rational -> the largest value of format d not above it (toward -inf), as a Python float."""
    e_bits, m, ieee = FMT[d]
    if x == 0:
        return 0.0
    a = abs(x)
    bias = (1 << (e_bits - 1)) - 1
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    q = max(e, 1 - bias) - m
    v = Fraction(math.floor(x / Fraction(2) ** q)) * Fraction(2) ** q
    if v > fmt_max(d):
        return float(fmt_max(d))
    if v < -fmt_max(d):
        return -math.inf if ieee else math.nan
    return float(v)


RNG_CASES = [  # (shape, seed, offset): partial blocks, negative seeds (key word 1 = 0xffffffff), counter carries
    ([7], 42, 0), ([3, 5], -1, 5), ([2, 3, 2], (1 << 40) + 123, (1 << 32) - 2), ([9], -(1 << 63), (1 << 63) - 1),
]


@check("philox_uniform")
def _philox_uniform(dtypes):
    out = []
    for d in FLOATS + FP8:
        for (shape, seed, offset), (low, high) in zip(RNG_CASES, [(0.0, 1.0), (-3.5, 2.25), (1e-3, 7.0),
                                                                  (-100.0, -99.5)]):
            n = int(np.prod(shape))
            want = []
            for w in philox_words(n, seed, offset):
                v = low + (high - low) * (w * 2.0 ** -32)  # Python floats: each operation rounded to f64
                want.append(round_down_fraction(Fraction(v), d))
            want = np.array(want, np.float64).astype(NP[d]).reshape(shape)
            attrs = {"shape": shape, "dtype": d, "seed": seed, "offset": offset, "low": repr(low), "high": repr(high)}
            out.append(exact_case([], attrs, want, d))
    return out


def box_muller_mp(w_a, w_b, second, mean, std):
    u1 = (mpmath.mpf(w_a) + 1) / 2 ** 32
    u2 = mpmath.mpf(w_b) / 2 ** 32
    r = mpmath.sqrt(-2 * mpmath.log(u1))
    z = r * (mpmath.sin(2 * mpmath.pi * u2) if second else mpmath.cos(2 * mpmath.pi * u2))
    return mpmath.mpf(mean) + mpmath.mpf(std) * z


def box_muller_f64(w_a, w_b, second, mean, std):
    u1, u2 = (w_a + 1) * 2.0 ** -32, w_b * 2.0 ** -32
    r = math.sqrt(-2 * math.log(u1))
    return mean + std * r * (math.sin(2 * math.pi * u2) if second else math.cos(2 * math.pi * u2))


@check("philox_normal")
def _philox_normal(dtypes):
    out = []
    for d in ("f16", "bf16", "f32", "f64"):
        for (shape, seed, offset), (mean, std) in zip(RNG_CASES, [(0.0, 1.0), (3.5, 0.25), (-1000.0, 2.0),
                                                                  (0.0, 1e-3)]):
            n = int(np.prod(shape))
            words = philox_words(n + (-n) % 4, seed, offset)  # whole blocks: a partial one still needs its pair
            # element 4k + j: the pair (w0, w1) for j = 0, 1 and (w2, w3) for j = 2, 3; cos for even j, sin for odd
            pairs = [(words[i - i % 4 + 2 * (i % 4 // 2)], words[i - i % 4 + 2 * (i % 4 // 2) + 1], i % 2 == 1)
                     for i in range(n)]
            ref64 = np.array([box_muller_f64(a, b, s, mean, std) for a, b, s in pairs])
            attrs = {"shape": shape, "dtype": d, "seed": seed, "offset": offset, "mean": repr(mean), "std": repr(std)}

            def cmp(outs, d=d, ref64=ref64, pairs=pairs, mean=mean, std=std):
                got = decode(outs[0]).reshape(-1)
                # float64 math is ~1e-15 relative: it judges the narrower formats to half an ulp (plus slack)
                bad = [] if d == "f64" else compare_ulp(got, ref64, d, 0.5 + 1.0 / 1024)
                if mpmath is not None:
                    for i, (g, (a, b, s)) in enumerate(zip(got.astype(np.float64), pairs)):
                        exact = box_muller_mp(a, b, s, mean, std)
                        rr = round_fraction(mp_fraction(exact), d)
                        err = abs(mpmath.mpf(float(g)) - exact) / ulp(max(abs(rr), 0.0), d)
                        if err > (1.0 if d == "f64" else 0.5 + 1.0 / 1024):
                            bad.append("mpmath [%d] got %r want %s (%.4f ulp)" % (i, float(g), mpmath.nstr(exact, 20),
                                                                                float(err)))
                return bad
            out.append(([], attrs, cmp))
    if mpmath is None:
        NO_MPMATH.add("philox_normal (f64)")
    return out


@check("philox_randint")
def _philox_randint(dtypes):
    out = []
    ranges = {"i32": [(-5, 5), (-(1 << 31), 1 << 31), (0, 1), (7, 1000)],
              "i64": [(-(1 << 62), -(1 << 62) + (1 << 32)), (10 ** 12, 10 ** 12 + 7), (-3, 3), (0, (1 << 32) - 1)],
              "i16": [(-300, 300), (0, 1 << 15), (-1, 0), (5, 6)]}
    for d, rs in ranges.items():
        for (shape, seed, offset), (low, high) in zip(RNG_CASES, rs):
            n = int(np.prod(shape))
            want = np.array([low + w % (high - low) for w in philox_words(n, seed, offset)], np.int64).reshape(shape)
            attrs = {"shape": shape, "dtype": d, "seed": seed, "offset": offset, "low": low, "high": high}
            out.append(exact_case([], attrs, want.astype(NP[d]), d))
    return out


# --- incomplete gamma and Hurwitz zeta against mpmath (128 bits), plus hand-checked special values
IGAMMA_SPECIALS = [  # (a, x, P, Q): the table's special values
    (1.0, 0.0, 0.0, 1.0), (0.0, 2.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0), (2.5, 0.0, 0.0, 1.0),
    (-1.0, 1.0, math.nan, math.nan), (1.0, -1.0, math.nan, math.nan), (math.nan, 1.0, math.nan, math.nan),
    (1.0, math.nan, math.nan, math.nan), (2.0, math.inf, 1.0, 0.0), (math.inf, 2.0, 0.0, 1.0),
    (math.inf, math.inf, math.nan, math.nan),
]
ZETA_SPECIALS = [  # (s, q, zeta)
    (1.0, 1.0, math.inf), (1.0, 3.5, math.inf), (0.5, 1.0, math.nan), (-2.0, 1.0, math.nan), (2.0, 0.0, math.inf),
    (2.0, -3.0, math.inf), (2.5, -0.5, math.nan), (math.nan, 1.0, math.nan), (2.0, math.nan, math.nan),
    (2.0, math.inf, 0.0),
]


def mp_compare_pairs(got, a, b, fn, d):
    """got[i] against fn(a[i], b[i]) evaluated by mpmath: within 1 ulp for f64 (the oracle's documented f64 gap),
    0.5 + 1/1024 ulp (essentially correctly rounded) for f32."""
    bad = []
    limit = 1.0 if d == "f64" else 0.5 + 1.0 / 1024
    for i, (g, av, bv) in enumerate(zip(got.astype(np.float64), a.astype(np.float64), b.astype(np.float64))):
        g, av, bv = float(g), float(av), float(bv)
        r = fn(mpmath.mpf(av), mpmath.mpf(bv))
        rr = round_fraction(mp_fraction(r), d) if r != 0 else 0.0
        if math.isinf(rr) or math.isinf(g) or math.isnan(g):
            if not same_value(g, rr):
                bad.append("[%d] (%r, %r) got %r want %s" % (i, av, bv, g, mpmath.nstr(r, 20)))
            continue
        err = abs(mpmath.mpf(g) - r) / ulp(abs(rr), d)
        if err > limit:
            bad.append("[%d] (%r, %r) got %r want %s (%.4f ulp)" % (i, av, bv, g, mpmath.nstr(r, 20), float(err)))
    return bad


def make_igamma(name, upper):
    def cases(dtypes):
        out = []
        if mpmath is None:
            NO_MPMATH.add(name)
            return out
        for d in ("f32", "f64"):
            # shapes a from 1e-3 to 300 (a few to 3e4), x around a (where P and Q both matter) and far from it
            a = np.exp(RNG.uniform(math.log(1e-3), math.log(300), 56))
            x = a * np.exp(RNG.uniform(-3, 1.5, 56))
            a = np.concatenate([a, np.exp(RNG.uniform(math.log(1e3), math.log(3e4), 6)), [0.5, 1e-5, 0.3, 2.0]])
            x = np.concatenate([x, np.zeros(6), [0.25, 0.9, 1.2, 30.0]])
            x[len(x) - 10:len(x) - 4] = a[len(a) - 10:len(a) - 4] * np.exp(RNG.uniform(-0.05, 0.05, 6))
            sp_a = np.array([s[0] for s in IGAMMA_SPECIALS], np.float64)
            sp_x = np.array([s[1] for s in IGAMMA_SPECIALS], np.float64)
            av = np.concatenate([sp_a, a]).astype(NP[d])
            xv = np.concatenate([sp_x, x]).astype(NP[d])
            n_sp = len(IGAMMA_SPECIALS)

            def fn(s, t):
                return mpmath.gammainc(s, t, mpmath.inf, regularized=True) if upper else \
                    mpmath.gammainc(s, 0, t, regularized=True)

            def cmp(outs, av=av, xv=xv, d=d, n_sp=n_sp):
                got = decode(outs[0]).reshape(-1)
                bad = []
                for i, sp in enumerate(IGAMMA_SPECIALS):
                    want = sp[3] if upper else sp[2]
                    if not same_value(float(got[i]), want):
                        bad.append("special (%r, %r) got %r want %r" % (sp[0], sp[1], float(got[i]), want))
                return bad + mp_compare_pairs(got[n_sp:], av[n_sp:], xv[n_sp:], fn, d)
            out.append(([(av, d), (xv, d)], {}, cmp))
        return out
    return cases


CHECKS["igamma"] = make_igamma("igamma", False)
CHECKS["igammac"] = make_igamma("igammac", True)


def zeta_em_mp(s, q):
    """Hurwitz zeta(s, q) at 256 bits: direct terms up to w = q + N >= max(64, 4 s), then Euler-Maclaurin with
    mpmath's exact Bernoulli numbers to 2^-200. mpmath.zeta itself is not reliable for large q and s (at
    s = 41.45, q = 8341 its result moves in the 13th digit between 128, 256 and 512 bits), so it only serves as a
    second reference where it is stable (see _zeta)."""
    with mpmath.workprec(256):
        s, q = mpmath.mpf(s), mpmath.mpf(q)
        total = mpmath.mpf(0)
        w = q
        while w < max(64, 4 * s):
            t = w ** (-s)
            total += t
            if w > 0 and abs(t * w / (s - 1)) < abs(total) * mpmath.ldexp(1, -200):
                return +total
            w += 1
        tail = w ** (1 - s) / (s - 1) + w ** (-s) / 2
        for j in range(1, 60):
            t = mpmath.bernoulli(2 * j) / mpmath.factorial(2 * j) * mpmath.rf(s, 2 * j - 1) * w ** (-s - 2 * j + 1)
            tail += t
            if abs(t) < abs(tail) * mpmath.ldexp(1, -200):
                break
        return +(total + tail)


def zeta_mp_stable(s, q):
    """mpmath.zeta where its 128- and 256-bit results agree to 2^-100 relative, else None."""
    with mpmath.workprec(128):
        lo = mpmath.zeta(s, q)
    with mpmath.workprec(256):
        hi = mpmath.zeta(s, q)
    return hi if abs(lo - hi) <= abs(hi) * mpmath.ldexp(1, -100) else None


@check("zeta")
def _zeta(dtypes):
    out = []
    if mpmath is None:
        NO_MPMATH.add("zeta")
        return out
    for d in ("f32", "f64"):
        s = 1 + np.exp(RNG.uniform(math.log(1e-6), math.log(60), 48))
        q = np.exp(RNG.uniform(math.log(1e-3), math.log(1e4), 48))
        # negative q off the integers: defined (real) for integer s
        s = np.concatenate([s, [2.0, 3.0, 4.0, 7.0, 1.5, 150.0, 1e4]])
        q = np.concatenate([q, [-0.5, -1.5, -2.25, -0.75, 1.0, 1.0, 2.5]])
        sv = np.concatenate([[t[0] for t in ZETA_SPECIALS], s]).astype(NP[d])
        qv = np.concatenate([[t[1] for t in ZETA_SPECIALS], q]).astype(NP[d])
        n_sp = len(ZETA_SPECIALS)

        def cmp(outs, sv=sv, qv=qv, d=d, n_sp=n_sp):
            got = decode(outs[0]).reshape(-1)
            bad = []
            for i, sp in enumerate(ZETA_SPECIALS):
                if not same_value(float(got[i]), sp[2]):
                    bad.append("special (%r, %r) got %r want %r" % (sp[0], sp[1], float(got[i]), sp[2]))
            bad += mp_compare_pairs(got[n_sp:], sv[n_sp:], qv[n_sp:], zeta_em_mp, d)
            # and against mpmath.zeta wherever it is stable (an independent algorithm)
            keep = [i for i in range(n_sp, len(sv)) if zeta_mp_stable(mpmath.mpf(float(sv[i])),
                                                                      mpmath.mpf(float(qv[i]))) is not None]
            return bad + ["mpmath.zeta " + b for b in mp_compare_pairs(
                got[keep], sv[keep], qv[keep], lambda a, b: zeta_mp_stable(a, b), d)]
        out.append(([(sv, d), (qv, d)], {}, cmp))
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
    ap.add_argument("--seed", type=int, default=20261202, help="sample seed (CTest uses the default)")
    args = ap.parse_args()
    global RNG
    RNG = np.random.default_rng(args.seed)
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
    if NO_MPMATH:
        print("note: mpmath is not installed: not checked: " + ", ".join(sorted(NO_MPMATH)))
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
