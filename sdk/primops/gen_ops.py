#!/usr/bin/env python3
"""Generates the ABI op header, the runtime's metadata tables and docs/ops.md from sdk/primops/ops.yaml.

    gen_ops.py            write the generated files
    gen_ops.py --check    exit 1 if a generated file is stale or was edited by hand (used by a test)

Every generated file starts with a line naming this script and the sha256 of the rest of the file, so a hand
edit is detected even before the table changes.
"""
import argparse
import hashlib
import os
import re
import sys

try:
    import yaml
except ImportError:  # pragma: no cover - setup installs it
    sys.exit("gen_ops.py: PyYAML is missing; run tools/setup.sh (or pip install pyyaml)")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE = os.path.join(ROOT, "sdk", "primops", "ops.yaml")
OUT_HEADER = os.path.join(ROOT, "sdk", "include", "primkit", "primkit_ops.h")
OUT_TABLE = os.path.join(ROOT, "sdk", "primops", "generated", "op_table.inc")
OUT_DOCS = os.path.join(ROOT, "docs", "ops.md")
OUT_LAYOUT = os.path.join(ROOT, "sdk", "primops", "generated", "attrs_layout.inc")
OUT_PY_DTYPES = os.path.join(ROOT, "python", "primkit", "_dtypes.py")
OUT_PY_STUB = os.path.join(ROOT, "python", "primkit", "ops.pyi")

MAX_RANK = 8
CATEGORIES = {
    "unary", "binary", "compare", "ternary", "reduction", "scan", "view", "shape", "conversion", "creation",
    "rng", "linalg", "indexing", "sort", "fft", "activation", "normalization", "pooling", "padding",
    "resampling", "attention", "loss", "misc", "memory",
}
SHAPE_RULES = ["elementwise", "reduce", "scan", "same_as_input", "custom", "derived"]
ALIAS = ["new", "view", "inplace"]
ATTR_TYPES = ["i64", "f64", "bool", "dtype", "ints", "enum"]
TIERS = ["primitive", "composite"]


class TableError(Exception):
    pass


def fail(op, msg):
    raise TableError("ops.yaml: op %s: %s" % (op.get("name", op.get("id", "?")), msg))


# ---------------------------------------------------------------------------------------------------------
# Loading and validation
# ---------------------------------------------------------------------------------------------------------


def load_table(path=TABLE):
    try:
        with open(path, encoding="utf-8") as f:
            table = yaml.safe_load(f)
    except yaml.YAMLError as e:
        raise TableError("ops.yaml: not valid YAML (%s): %s" % (path, " ".join(str(e).split())))
    except (OSError, UnicodeDecodeError) as e:
        raise TableError("ops.yaml: cannot read %s: %s" % (path, e))
    return normalize_table(table)


# The types of every field the generator reads, checked before anything else reads them, so that a malformed table
# fails with a message naming the row and field instead of a Python traceback. A value of None (YAML's empty
# value) for an optional field counts as absent only where the generator treats it so (types).
def _type_name(t):
    names = {str: "a string", int: "an integer", float: "a number", bool: "true/false", list: "a list",
             dict: "a mapping"}
    if isinstance(t, tuple):
        return " or ".join(names[x] for x in t)
    return names[t]


def _is(value, t):
    ts = t if isinstance(t, tuple) else (t,)
    if isinstance(value, bool) and bool not in ts:
        return False  # YAML's true/false is not an integer or a number here
    if float in ts and isinstance(value, int) and not isinstance(value, bool):
        return True
    return isinstance(value, ts)


def _field(where, row, key, t, required=False):
    if key not in row:
        if required:
            raise TableError("ops.yaml: %s: missing field %s" % (where, key))
        return
    if not _is(row[key], t):
        raise TableError("ops.yaml: %s: field %s must be %s, not %r" % (where, key, _type_name(t), row[key]))


def _list_of(where, value, t, what):
    if not isinstance(value, list):
        raise TableError("ops.yaml: %s: %s must be a list, not %r" % (where, what, value))
    for i, item in enumerate(value):
        if not _is(item, t):
            raise TableError("ops.yaml: %s: %s[%d] must be %s, not %r" % (where, what, i, _type_name(t), item))


def check_schema(table):
    if not isinstance(table, dict):
        raise TableError("ops.yaml: the table must be a mapping with version, dtypes, dtype_groups, enums and ops")
    for key, t in (("version", (str, float)), ("dtypes", list), ("dtype_groups", dict), ("ops", list)):
        _field("top level", table, key, t, required=True)
    _field("top level", table, "enums", dict)
    for key in ("dtypes", "ops"):
        if not table[key]:
            raise TableError("ops.yaml: %s is empty" % key)
    for i, d in enumerate(table["dtypes"]):
        where = "dtype #%d" % i
        if not isinstance(d, dict):
            raise TableError("ops.yaml: %s must be a mapping, not %r" % (where, d))
        for key, t in (("name", str), ("id", int), ("code", str), ("bits", int), ("doc", str)):
            _field(where, d, key, t, required=True)
    for g, members in table["dtype_groups"].items():
        _list_of("dtype group %s" % g, members, str, "the group")
    for name, e in (table.get("enums") or {}).items():
        where = "enum %s" % name
        if not isinstance(name, str) or not isinstance(e, dict):
            raise TableError("ops.yaml: %s must be a mapping with values and doc" % where)
        _field(where, e, "doc", str, required=True)
        _field(where, e, "values", list, required=True)
        _list_of(where, e["values"], str, "values")
    for i, op in enumerate(table["ops"]):
        if not isinstance(op, dict):
            raise TableError("ops.yaml: op #%d must be a mapping, not %r" % (i, op))
        where = "op %s" % (op.get("name") if isinstance(op.get("name"), str) else "#%d" % i)
        for key, t in (("id", int), ("name", str), ("category", str)):
            _field(where, op, key, t, required=True)
        for key in ("tier", "shape", "alias", "since", "doc", "example", "decomposition", "opmath"):
            _field(where, op, key, str)
        _field(where, op, "contract", (str, dict))
        _field(where, op, "reduce", (str, dict))
        _field(where, op, "grading", dict)
        _field(where, op, "fused_check", bool)
        if isinstance(op.get("contract"), dict):
            for key in ("ulp", "quality", "half", "bound"):
                _field(where + " contract", op["contract"], key, float)
            _field(where + " contract", op["contract"], "scale", str)
        if op.get("types") is not None:
            _field(where, op, "types", dict)
            for var, spec in op["types"].items():
                if not isinstance(var, str):
                    raise TableError("ops.yaml: %s: type variable %r must be a name" % (where, var))
                if not isinstance(spec, str):
                    _list_of("%s type %s" % (where, var), spec, str, "its dtypes")
        for key in ("inputs", "outputs", "attrs"):
            if key in op:
                _list_of(where, op[key], dict, key)
        for operand in op.get("inputs", []) + op.get("outputs", []):
            _field(where, operand, "name", str, required=True)
            _field("%s operand %s" % (where, operand["name"]), operand, "type", str, required=True)
            for key in ("variadic", "optional"):
                _field("%s operand %s" % (where, operand["name"]), operand, key, bool)
        for a in op.get("attrs", []):
            _field(where, a, "name", str, required=True)
            aw = "%s attr %s" % (where, a["name"])
            _field(aw, a, "type", str, required=True)
            for key, t in (("min", float), ("max", float), ("dim_of", str), ("choices", str), ("required", bool)):
                _field(aw, a, key, t)
            if "default" in a:
                d, t = a["default"], a["type"]
                ok = {"i64": lambda: _is(d, int), "f64": lambda: _is(d, float), "bool": lambda: _is(d, bool),
                      "dtype": lambda: _is(d, str), "enum": lambda: _is(d, str),
                      "ints": lambda: isinstance(d, list) and all(_is(x, int) for x in d)}.get(t, lambda: True)()
                if not ok:
                    raise TableError("ops.yaml: %s: default %r does not fit type %s" % (aw, d, t))


def normalize_table(table):
    """Checks and normalizes a parsed table (load_table's work after YAML); returns (table, ops by name)."""
    check_schema(table)
    dtypes = table["dtypes"]
    dnames = [d["name"] for d in dtypes]
    DTYPE_NAMES.clear()
    DTYPE_NAMES.update(dnames)
    for i, d in enumerate(dtypes):
        if d["id"] != i:
            raise TableError("ops.yaml: dtype %s: ids must be dense and in order" % d["name"])
    groups = table["dtype_groups"]
    for g, members in groups.items():
        for m in members:
            if m not in dnames:
                raise TableError("ops.yaml: dtype group %s: unknown dtype %s" % (g, m))
    enums = table.get("enums", {})
    ops = table["ops"]
    seen_ids, seen_names = {}, {}
    for op in ops:
        normalize_op(op, dnames, groups, enums)
        if op["id"] in seen_ids:
            fail(op, "id %d already used by %s" % (op["id"], seen_ids[op["id"]]))
        if op["name"] in seen_names:
            fail(op, "duplicate name")
        seen_ids[op["id"]] = op["name"]
        seen_names[op["name"]] = op
    by_name = seen_names
    for op in ops:
        if op["tier"] == "composite":
            op["decomp_program"] = parse_decomposition(op, by_name)
    ops.sort(key=lambda o: o["id"])
    return table, by_name


def resolve_dtypes(op, spec, dnames, groups):
    if isinstance(spec, str):
        if spec in groups:
            return list(groups[spec])
        if spec in dnames:
            return [spec]
        fail(op, "unknown dtype or group %r" % spec)
    out = []
    for s in spec:
        for d in resolve_dtypes(op, s, dnames, groups):
            if d not in out:
                out.append(d)
    return out


def normalize_op(op, dnames, groups, enums):
    for key in ("id", "name", "category"):
        if key not in op:
            fail(op, "missing field %s" % key)
    if not re.fullmatch(r"[a-z][a-z0-9_]*", op["name"]):
        fail(op, "name must be snake_case")
    op.setdefault("tier", "primitive")
    if op["tier"] not in TIERS:
        fail(op, "tier must be one of %s" % TIERS)
    if op["tier"] == "primitive" and not (1 <= op["id"] < 1000):
        fail(op, "primitive ids are 1..999")
    if op["tier"] == "composite" and op["id"] < 1000:
        fail(op, "composite ids are >= 1000")
    if op["category"] not in CATEGORIES:
        fail(op, "unknown category %s" % op["category"])
    cat = op["category"]
    default_inputs = {
        "unary": [{"name": "a", "type": "T"}],
        "binary": [{"name": "a", "type": "T"}, {"name": "b", "type": "T"}],
        "compare": [{"name": "a", "type": "T"}, {"name": "b", "type": "T"}],
        "ternary": [{"name": "a", "type": "T"}, {"name": "b", "type": "T"}, {"name": "c", "type": "T"}],
    }
    if "inputs" not in op:
        if cat not in default_inputs:
            fail(op, "inputs required for category %s" % cat)
        op["inputs"] = default_inputs[cat]
    if "outputs" not in op:
        op["outputs"] = [{"name": "out", "type": "bool" if cat == "compare" else "T"}]
    op.setdefault("attrs", [])
    op.setdefault("shape", "elementwise" if cat in default_inputs else None)
    if op["shape"] not in SHAPE_RULES:
        fail(op, "shape must be one of %s" % SHAPE_RULES)
    op.setdefault("alias", "new")
    if op["alias"] not in ALIAS:
        fail(op, "alias must be one of %s" % ALIAS)
    op.setdefault("since", "1.0")
    op.setdefault("doc", "")
    if "contract" not in op:
        fail(op, "missing contract")
    op["contract"] = normalize_contract(op, op["contract"])
    types = op.get("types") or {}
    op["type_vars"] = []
    for var, spec in types.items():
        if not re.fullmatch(r"[A-Z][A-Z0-9]*", var):
            fail(op, "type variable %s must be upper case" % var)
        op["type_vars"].append((var, resolve_dtypes(op, spec, dnames, groups)))
    var_names = [v for v, _ in op["type_vars"]]
    for i, operand in enumerate(op["inputs"]):
        t = operand.get("type")
        if t not in var_names and t not in dnames:
            fail(op, "input %s: type %r is neither a type variable nor a dtype" % (operand.get("name"), t))
        if operand.get("variadic") and i != len(op["inputs"]) - 1:
            fail(op, "only the last input may be variadic")
        operand.setdefault("variadic", False)
        operand.setdefault("optional", False)
    attr_names = [a["name"] for a in op["attrs"]]
    for a in op["attrs"]:
        if a.get("type") not in ATTR_TYPES:
            fail(op, "attr %s: type must be one of %s" % (a.get("name"), ATTR_TYPES))
        if a["type"] == "enum":
            if a.get("choices") not in enums:
                fail(op, "attr %s: choices must name an enum" % a["name"])
            if "default" in a and a["default"] not in enums[a["choices"]]["values"]:
                fail(op, "attr %s: default %r is not a choice" % (a["name"], a["default"]))
        if a.get("required"):
            if a["type"] != "f64" or "default" in a:
                fail(op, "attr %s: required is for f64 attributes without a default (NaN marks them unset)" % a["name"])
        if "dim_of" in a:
            if a["dim_of"] not in [x["name"] for x in op["inputs"]]:
                fail(op, "attr %s: dim_of names no input" % a["name"])
            if a["type"] not in ("i64", "ints"):
                fail(op, "attr %s: dim_of needs i64 or ints" % a["name"])
    if len(set(attr_names)) != len(attr_names):
        fail(op, "duplicate attribute names")
    for o in op["outputs"]:
        t = o.get("type", "")
        if t in var_names or t in dnames:
            continue
        m = re.fullmatch(r"(attr|real_of|complex_of):(\w+)", t)
        if not m:
            fail(op, "output %s: bad type rule %r" % (o.get("name"), t))
        kind, arg = m.groups()
        if kind == "attr":
            if arg not in attr_names or next(a for a in op["attrs"] if a["name"] == arg)["type"] != "dtype":
                fail(op, "output %s: attr:%s must name a dtype attribute" % (o["name"], arg))
        elif arg not in var_names:
            fail(op, "output %s: %s names no type variable" % (o["name"], t))
    if op["shape"] == "derived" and op["tier"] != "composite":
        fail(op, "shape: derived (outputs typed by the decomposition) is for composite ops only")
    if "example" in op and not isinstance(op["example"], str):
        fail(op, "example must be a string like \"x: f32[2,3]; dim=1\"")
    if op["shape"] in ("custom", "derived") and op["inputs"] and "example" not in op:
        fail(op, "ops with shape %s need an example (sample input types and attributes)" % op["shape"])
    for a in op["attrs"]:
        if a["type"] == "ints" and "default" in a and not isinstance(a["default"], list):
            fail(op, "attr %s: an ints default is a list" % a["name"])
    if op["tier"] == "composite" and not op.get("decomposition"):
        fail(op, "composite ops need a decomposition")
    # opmath: the precision a composite's decomposition computes in for 16- and 8-bit float inputs. "f32" (the
    # default for composites whose contract is a bound or a reduction: PyTorch's opmath) converts such inputs to
    # f32, runs the program there and rounds each output once; "none" runs the program in the input dtype (exact
    # rows: data movement and selections lose nothing; rows whose one arithmetic primitive already accumulates in
    # f32 and rounds once).
    default_opmath = "f32" if op["tier"] == "composite" and op["contract"]["kind"] in ("bound", "reduction") else "none"
    op.setdefault("opmath", default_opmath)
    if op["opmath"] not in ("f32", "none"):
        fail(op, "opmath must be f32 or none")
    if op["opmath"] == "f32" and op["tier"] != "composite":
        fail(op, "opmath: f32 is for composite ops (primitives' kernels choose their own precision)")
    if op["tier"] == "primitive" and op.get("decomposition"):
        fail(op, "primitive ops have no decomposition")
    op["reduce"] = normalize_reduce(op, op.get("reduce"))
    op["grading"] = normalize_grading(op, op.get("grading"))
    op.setdefault("fused_check", False)
    if op["fused_check"] and op["tier"] != "composite":
        fail(op, "fused_check: true is for composite ops (their decomposition runs through the fusion hook)")


# A primitive reduction's fold: the combine step and the identity of an empty reduction. Each combine admits
# only the identities that are its identity element for some dtype, so a typo fails here instead of producing a
# kernel that starts from the wrong value.
REDUCE_COMBINES = {
    "add": ["zero"], "mul": ["one"], "max": ["lowest"], "min": ["highest"], "or": ["false"], "and": ["true"],
    "xor": ["zero"], "argmax": ["lowest"], "argmin": ["highest"],
}


def normalize_reduce(op, r):
    is_reduction = op["tier"] == "primitive" and op["category"] == "reduction"
    if r is None:
        if is_reduction:
            fail(op, "a primitive reduction needs `reduce: {combine: ..., identity: ...}` (or `reduce: line` for one "
                     "that walks whole lines); the code generators read their reduction list from it")
        return {"combine": "none", "identity": "none"}
    if not is_reduction:
        fail(op, "reduce: is for primitive ops of category reduction")
    if isinstance(r, dict) and isinstance(r.get("identity"), bool):
        r = dict(r, identity="true" if r["identity"] else "false")  # YAML reads `identity: false` as a boolean
    if r == "line":
        return {"combine": "line", "identity": "none"}
    if not isinstance(r, dict) or set(r) != {"combine", "identity"}:
        fail(op, "reduce must be `line` or {combine: ..., identity: ...}")
    if not isinstance(r["combine"], str) or r["combine"] not in REDUCE_COMBINES:
        fail(op, "reduce combine must be one of %s" % sorted(REDUCE_COMBINES))
    if r["identity"] not in REDUCE_COMBINES[r["combine"]]:
        fail(op, "reduce identity of combine %s must be %s" % (r["combine"], " or ".join(REDUCE_COMBINES[r["combine"]])))
    return dict(r)


GRADING_SCALES = ["output", "magnitudes", "input_l1", "input_l1_twice", "squared_spread", "one_plus_input_max"]
GRADING_TERMS = ["automatic", "contraction", "weight_fan_in"]  # and {attr_axes|attr_product|widest_bin: ATTR}
GRADING_TERMS_WITH_ATTR = ["attr_axes", "attr_product", "widest_bin"]
GRADING_NONFINITE = ["only_where_exact", "any", "any_complex"]


def normalize_grading(op, g):
    """The conformance grading rules of a row (see docs/numerics.md). Composites are graded against the
    magnitudes of their terms by default: their programs sum and multiply intermediate results."""
    g = dict(g or {})
    known = {"scale", "terms", "nonfinite", "overflow_scale", "complex_zero_sign_free"}
    for k in g:
        if k not in known:
            fail(op, "grading has no field %s (fields: %s)" % (k, ", ".join(sorted(known))))
    g.setdefault("scale", "magnitudes" if op["tier"] == "composite" else "output")
    if g["scale"] not in GRADING_SCALES:
        fail(op, "grading scale must be one of %s" % GRADING_SCALES)
    terms = g.get("terms", "automatic")
    g["terms_attr"] = None
    if isinstance(terms, dict):
        if len(terms) != 1 or next(iter(terms)) not in GRADING_TERMS_WITH_ATTR:
            fail(op, "grading terms with an attribute must be one of {%s: ATTR}" % "|".join(GRADING_TERMS_WITH_ATTR))
        kind, attr = next(iter(terms.items()))
        if not isinstance(attr, str):
            fail(op, "grading terms %s: the attribute must be a name" % kind)
        a = next((x for x in op["attrs"] if x["name"] == attr), None)
        if a is None or a["type"] != "ints":
            fail(op, "grading terms %s: %r must name an ints attribute of the op" % (kind, attr))
        terms, g["terms_attr"] = kind, attr
    elif terms not in GRADING_TERMS:
        fail(op, "grading terms must be one of %s or {%s: ATTR}" % (GRADING_TERMS, "|".join(GRADING_TERMS_WITH_ATTR)))
    g["terms"] = terms
    g.setdefault("nonfinite", "only_where_exact")
    if g["nonfinite"] not in GRADING_NONFINITE:
        fail(op, "grading nonfinite must be one of %s" % GRADING_NONFINITE)
    for k in ("overflow_scale", "complex_zero_sign_free"):
        g.setdefault(k, False)
        if not isinstance(g[k], bool):
            fail(op, "grading %s must be true or false" % k)
    if op["contract"]["kind"] != "reduction":
        for k, default in (("scale", None), ("terms", "automatic"), ("nonfinite", "only_where_exact"),
                           ("overflow_scale", False)):
            if default is not None and g[k] != default:
                fail(op, "grading %s applies to reduction contracts only" % k)
    return g


def normalize_contract(op, c):
    if c in ("exact", "correctly_rounded", "reduction"):
        return {"kind": c, "ulp": 0.0, "quality": 0.0, "half": 0.0}
    if isinstance(c, dict) and "ulp" in c:
        ulp = float(c["ulp"])
        return {"kind": "ulp", "ulp": ulp, "quality": float(c.get("quality", ulp)), "half": float(c.get("half", 1.0))}
    if isinstance(c, dict) and "bound" in c:
        scale = c.get("scale")
        if scale is None:
            # Elementwise composites are conditioned on their inputs' magnitude at the element; the others (row
            # ops) on the output's scale. See docs/numerics.md.
            axis = any("dim_of" in a for a in op.get("attrs", []))
            scale = "input" if op.get("shape") == "elementwise" or (op.get("shape") == "same_as_input" and not axis) else "output"
        if scale not in ("none", "input", "output"):
            fail(op, "contract scale must be none, input or output")
        return {"kind": "bound", "ulp": float(c["bound"]), "quality": float(c["bound"]),
                "half": float(c.get("half", c["bound"])), "scale": scale}
    fail(op, "bad contract %r" % (c,))


# ---------------------------------------------------------------------------------------------------------
# Decompositions: `name = op(args..., attr=expr, ...)` lines and a final `return a, b`.
# The runtime (sdk/primops/decomposition.cpp) parses the same text; here it is checked so that a typo fails
# generation instead of a conformance run.
# ---------------------------------------------------------------------------------------------------------

DECOMP_FUNCS = {"shape", "rank", "dtype", "numel", "size", "iota", "remove", "insert", "concat", "at", "min",
                "max", "float", "int", "slice_list", "reverse", "prod", "permute_inverse", "repeat", "without",
                "compute_dtype", "is_bool"}
DECOMP_CONSTANTS = {"true", "false", "inf", "nan", "pi"}
DTYPE_NAMES = set()  # filled by load_table: dtype names are values in decompositions
TOKEN = re.compile(r"\s*(?:(\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+)|([A-Za-z_][A-Za-z0-9_]*)|(\S))")


def tokenize(text, op):
    pos, toks = 0, []
    text = text.rstrip()
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            break
        pos = m.end()
        if m.group(1) is not None:
            toks.append(("num", m.group(1)))
        elif m.group(2) is not None:
            toks.append(("id", m.group(2)))
        elif m.group(3) is not None:
            toks.append(("op", m.group(3)))
    return toks


def parse_decomposition(op, by_name):
    lines = [ln.strip() for ln in op["decomposition"].strip().splitlines() if ln.strip() and not ln.strip().startswith("#")]
    if not lines or not lines[-1].startswith("return "):
        fail(op, "decomposition must end with `return ...`")
    env = {x["name"] for x in op["inputs"]}
    attrs = {a["name"] for a in op["attrs"]}
    program = []

    def check_call(toks, i, target):
        # toks[i] is an id followed by '('
        name = toks[i][1]
        if name in DECOMP_FUNCS and not (name in by_name):
            return None
        if name not in by_name:
            fail(op, "decomposition line `%s`: unknown op %s" % (target, name))
        callee = by_name[name]
        if callee["tier"] != "primitive":
            fail(op, "decomposition uses composite %s; decompose into primitives only" % name)
        return callee

    for ln in lines[:-1]:
        m = re.fullmatch(r"([a-z_][a-z0-9_]*(?:\s*,\s*[a-z_][a-z0-9_]*)*)\s*=\s*(.+)", ln)
        if not m:
            fail(op, "decomposition line not `name = op(...)`: %s" % ln)
        targets = [t.strip() for t in m.group(1).split(",")]
        toks = tokenize(m.group(2), op)
        depth = 0
        for i, (kind, val) in enumerate(toks):
            if kind == "op" and val == "(":
                depth += 1
            elif kind == "op" and val == ")":
                depth -= 1
            elif kind == "id" and i + 1 < len(toks) and toks[i + 1] == ("op", "("):
                callee = check_call(toks, i, ln)
                if callee is not None:
                    # keyword names must be attributes of the callee
                    j, d = i + 2, 1
                    while j < len(toks) and d > 0:
                        if toks[j] == ("op", "("):
                            d += 1
                        elif toks[j] == ("op", ")"):
                            d -= 1
                        elif d == 1 and toks[j][0] == "id" and j + 1 < len(toks) and toks[j + 1] == ("op", "=") :
                            if toks[j][1] not in [a["name"] for a in callee["attrs"]]:
                                fail(op, "decomposition: %s has no attribute %s" % (callee["name"], toks[j][1]))
                        j += 1
            elif kind == "id" and (i + 1 >= len(toks) or toks[i + 1] != ("op", "(")):
                if i + 1 < len(toks) and toks[i + 1] == ("op", "="):
                    continue  # keyword
                if val not in env and val not in attrs and val not in DECOMP_CONSTANTS and val not in DTYPE_NAMES:
                    fail(op, "decomposition: `%s` uses %s before it is defined" % (ln, val))
        if depth != 0:
            fail(op, "decomposition: unbalanced parentheses in %s" % ln)
        env.update(targets)
        program.append(ln)
    rets = [r.strip() for r in lines[-1][len("return "):].split(",")]
    for r in rets:
        if r not in env:
            fail(op, "decomposition returns undefined %s" % r)
    if len(rets) != len(op["outputs"]):
        fail(op, "decomposition returns %d values, op has %d outputs" % (len(rets), len(op["outputs"])))
    return program


# ---------------------------------------------------------------------------------------------------------
# Emitters
# ---------------------------------------------------------------------------------------------------------


def c_ident(name):
    return name.upper()


def stamp(body, comment_open, comment_close=""):
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    first = "%s GENERATED by sdk/primops/gen_ops.py from sdk/primops/ops.yaml — do not edit. sha256:%s%s\n" % (
        comment_open, digest, comment_close)
    return first + body


def attr_c_fields(a):
    n = a["name"]
    t = a["type"]
    if t == "i64":
        return ["int64_t %s;" % n]
    if t == "f64":
        return ["double %s;" % n]
    if t in ("bool", "dtype", "enum"):
        return ["int32_t %s;" % n]
    if t == "ints":
        return ["int32_t num_%s;" % n, "int64_t %s[PK_MAX_RANK];" % n]
    raise AssertionError(t)


def attr_default_c(a, enums):
    t = a["type"]
    d = a.get("default")
    if t == "ints":
        if d:
            return ["%d" % len(d), "{%s}" % ", ".join(str(int(x)) for x in d)]
        return ["0", "{0}"]
    if d is None:
        return ["NAN"] if a.get("required") else ["0"]
    if t == "enum":
        return ["PK_%s_%s" % (c_ident(a["choices"]), c_ident(d))]
    if t == "bool":
        return ["1" if d else "0"]
    if t == "dtype":
        return ["PK_DTYPE_%s" % c_ident(d)]
    if t == "f64":
        return [repr(float(d))]
    return [str(int(d))]


def emit_header(table):
    dtypes = table["dtypes"]
    ops = table["ops"]
    enums = table.get("enums", {})
    L = []
    w = L.append
    w("/*")
    w(" * primkit_ops.h — op ids, dtype ids and attribute structs of the PrimKit op table (ABI %s)." % table["version"])
    w(" * Include primkit/primkit.h, not this file. Ids are stable forever; new ops and attribute fields are only")
    w(" * appended. Every attribute struct starts with struct_size and has a PK_ATTRS_<OP>_INIT initializer that")
    w(" * sets it and the defaults of the op table.")
    w(" */")
    w("#ifndef PRIMKIT_OPS_H")
    w("#define PRIMKIT_OPS_H")
    w("")
    w("#ifndef PRIMKIT_H")
    w('#error "include primkit/primkit.h instead of primkit_ops.h"')
    w("#endif")
    w("")
    w("/* Dtype ids: dense, used in capability masks (1u << id) and dtype attributes. */")
    w("enum {")
    for d in dtypes:
        w("  PK_DTYPE_%s = %d, /* %s */" % (c_ident(d["name"]), d["id"], d["doc"]))
    w("  PK_DTYPE_COUNT = %d" % len(dtypes))
    w("};")
    w("")
    w("/* The DLPack-compatible pk_dtype of each dtype id. */")
    for d in dtypes:
        w("#define PK_DTYPE_%s_DESC {PK_DTYPE_CODE_%s, %d, 1}" % (c_ident(d["name"]), d["code"], d["bits"]))
    w("")
    for ename, e in enums.items():
        w("/* %s */" % e["doc"])
        w("enum {")
        for i, v in enumerate(e["values"]):
            w("  PK_%s_%s = %d%s" % (c_ident(ename), c_ident(v), i, "," if i + 1 < len(e["values"]) else ""))
        w("};")
        w("")
    w("/* Op ids. 1..999 primitive tier, 1000.. composite tier. */")
    w("enum {")
    w("  PK_OP_NONE = 0,")
    for op in ops:
        w("  PK_OP_%s = %d, /* %s, %s */" % (c_ident(op["name"]), op["id"], op["tier"], op["category"]))
    w("  PK_OP_ID_LIMIT = %d /* one past the largest id */" % (ops[-1]["id"] + 1))
    w("};")
    w("#define PK_OP_COUNT %d" % len(ops))
    w("")
    w("/* Attribute structs: launches of an op with attributes pass a pointer to its struct. */")
    for op in ops:
        if not op["attrs"]:
            continue
        sname = "pk_attrs_%s" % op["name"]
        w("typedef struct %s {" % sname)
        w("  uint32_t struct_size;")
        for a in op["attrs"]:
            for f in attr_c_fields(a):
                w("  %s" % f)
        w("} %s;" % sname)
        inits = ["(uint32_t)sizeof(%s)" % sname]
        for a in op["attrs"]:
            inits += attr_default_c(a, enums)
        w("#define PK_ATTRS_%s_INIT {%s}" % (c_ident(op["name"]), ", ".join(inits)))
    w("")
    w("#endif /* PRIMKIT_OPS_H */")
    body = "\n".join(L) + "\n"
    return stamp(body, "/*", " */")


def cstr(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def dtype_mask(names, dtypes):
    idx = {d["name"]: d["id"] for d in dtypes}
    m = 0
    for n in names:
        m |= 1 << idx[n]
    return m


def emit_table(table):
    dtypes = table["dtypes"]
    idx = {d["name"]: d["id"] for d in dtypes}
    ops = table["ops"]
    enums = table.get("enums", {})
    enum_names = list(enums.keys())
    L = []
    w = L.append
    w("// Op metadata for sdk/primops/op_table.cpp: one OpInfo per row of ops.yaml, in id order.")
    w("// clang-format off")
    for op in ops:
        if op["shape"] == "custom":
            w("bool shape_%s(const OpInfo &, const TensorType *, uint32_t, const void *, TensorType *, Diag &);" % op["name"])
    for op in ops:
        n = op["name"]
        var_names = [v for v, _ in op["type_vars"]]
        w("static const TypeVarInfo k_types_%s[] = {%s};" % (
            n, ", ".join("{%s, 0x%xu}" % (cstr(v), dtype_mask(ds, dtypes)) for v, ds in op["type_vars"]) or "{nullptr, 0u}"))
        ins = []
        for operand in op["inputs"]:
            t = operand["type"]
            if t in var_names:
                tv, fixed = var_names.index(t), -1
            else:
                tv, fixed = -1, idx[t]
            ins.append("{%s, %d, %d, %s, %s}" % (cstr(operand["name"]), tv, fixed,
                                                 "true" if operand["variadic"] else "false",
                                                 "true" if operand["optional"] else "false"))
        w("static const OperandInfo k_inputs_%s[] = {%s};" % (n, ", ".join(ins) or "{nullptr, -1, -1, false, false}"))
        outs = []
        for o in op["outputs"]:
            t = o["type"]
            if t in var_names:
                rule, arg = "DtypeRule::type_var", var_names.index(t)
            elif t in idx:
                rule, arg = "DtypeRule::fixed", idx[t]
            else:
                kind, a = t.split(":")
                if kind == "attr":
                    rule, arg = "DtypeRule::attr", [x["name"] for x in op["attrs"]].index(a)
                elif kind == "real_of":
                    rule, arg = "DtypeRule::real_of", var_names.index(a)
                else:
                    rule, arg = "DtypeRule::complex_of", var_names.index(a)
            outs.append("{%s, %s, %d}" % (cstr(o["name"]), rule, arg))
        w("static const OutputInfo k_outputs_%s[] = {%s};" % (n, ", ".join(outs)))
        attrs = []
        sname = "pk_attrs_%s" % n
        in_names = [x["name"] for x in op["inputs"]]
        for a in op["attrs"]:
            t = a["type"]
            off = "offsetof(%s, %s)" % (sname, a["name"])
            cnt = "offsetof(%s, num_%s)" % (sname, a["name"]) if t == "ints" else "0"
            has_min = "min" in a
            has_max = "max" in a
            enum_id = enum_names.index(a["choices"]) if t == "enum" else -1
            enum_count = len(enums[a["choices"]]["values"]) if t == "enum" else 0
            dim_of = in_names.index(a["dim_of"]) if "dim_of" in a else -1
            default = a.get("default")
            if t == "enum" and default is not None:
                default = enums[a["choices"]]["values"].index(default)
            elif t == "dtype" and default is not None:
                default = idx[default]
            elif t == "bool" and default is not None:
                default = 1 if default else 0
            dnum = 0.0 if (default is None or t == "ints") else float(default)
            dints = "nullptr, 0"
            if t == "ints" and default:
                w("static const int64_t k_default_%s_%s[] = {%s};" % (n, a["name"], ", ".join("%d" % v for v in default)))
                dints = "k_default_%s_%s, %d" % (n, a["name"], len(default))
            attrs.append(("{%s, AttrType::%s, %s, %s, %s, %r, %s, %r, %d, %d, %d, %s, %r, " + dints + ", %s}") % (
                cstr(a["name"]), "boolean" if t == "bool" else ("enumeration" if t == "enum" else t), off, cnt,
                "true" if has_min else "false", float(a.get("min", 0)), "true" if has_max else "false",
                float(a.get("max", 0)), dim_of, enum_id, enum_count,
                "true" if default is not None else "false", dnum, "true" if a.get("required") else "false"))
        if attrs:
            w("static const AttrInfo k_attrs_%s[] = {%s};" % (n, ", ".join(attrs)))
    w("")
    w("static const OpInfo k_op_table[] = {")
    for op in ops:
        n = op["name"]
        c = op["contract"]
        dims = ""
        w("  {%d, %s, Tier::%s, %s, %d, k_types_%s, %d, k_inputs_%s, %d, k_outputs_%s, %d, %s, %s, "
          "ShapeRule::%s, Alias::%s, {Contract::%s, %r, %r, %r, BoundScale::%s}, %s, %s, %s, %s, %s, %s, "
          "%s, %s, %s}," % (
              op["id"], cstr(n), op["tier"], cstr(op["category"]), len(op["type_vars"]), n,
              len(op["inputs"]), n, len(op["outputs"]), n, len(op["attrs"]),
              ("k_attrs_%s" % n) if op["attrs"] else "nullptr",
              ("sizeof(pk_attrs_%s)" % n) if op["attrs"] else "0",
              op["shape"], op["alias"], "correctly_rounded" if c["kind"] == "correctly_rounded" else c["kind"],
              c["ulp"], c["quality"], c["half"], c.get("scale", "none"),
              cstr(op["decomposition"].strip()) if op["tier"] == "composite" else "nullptr",
              cstr(op["since"]), cstr(op["doc"]),
              ("&shape_%s" % n) if op["shape"] == "custom" else "nullptr",
              cstr(op["example"]) if "example" in op else "nullptr",
              "true" if op["opmath"] == "f32" else "false", reduce_c(op["reduce"]), grading_c(op["grading"]),
              "true" if op["fused_check"] else "false"))
        del dims
    w("};")
    w("")
    w("static const char *const k_enum_values[][%d] = {" % max([len(e["values"]) for e in enums.values()] + [1]))
    for e in enums.values():
        w("  {%s}," % ", ".join(cstr(v) for v in e["values"]))
    w("};")
    w("static const char *const k_enum_names[] = {%s};" % ", ".join(cstr(e) for e in enum_names))
    w("static constexpr uint32_t k_enum_count = %d;" % len(enum_names))
    w("")
    w("static const DtypeInfo k_dtype_table[] = {")
    for d in dtypes:
        w("  {%d, %s, {PK_DTYPE_CODE_%s, %d, 1}, %s}," % (d["id"], cstr(d["name"]), d["code"], d["bits"], cstr(d["doc"])))
    w("};")
    w("// clang-format on")
    body = "\n".join(L) + "\n"
    return stamp(body, "//")


C_COMBINE = {"none": "none", "line": "line", "add": "add", "mul": "mul", "max": "max", "min": "min",
             "or": "logical_or", "and": "logical_and", "xor": "bit_xor", "argmax": "argmax", "argmin": "argmin"}
C_IDENTITY = {"none": "none", "zero": "zero", "one": "one", "lowest": "lowest", "highest": "highest",
              "false": "false_", "true": "true_"}


def reduce_c(r):
    return "{Combine::%s, Identity::%s}" % (C_COMBINE[r["combine"]], C_IDENTITY[r["identity"]])


def grading_c(g):
    return "{ErrorScale::%s, TermsRule::%s, %s, NonfiniteTerms::%s, %s, %s}" % (
        g["scale"], g["terms"], cstr(g["terms_attr"]) if g["terms_attr"] else "nullptr", g["nonfinite"],
        "true" if g["overflow_scale"] else "false", "true" if g["complex_zero_sign_free"] else "false")


def contract_text(c):
    if c["kind"] == "exact":
        return "exact"
    if c["kind"] == "correctly_rounded":
        return "correctly rounded"
    if c["kind"] == "reduction":
        return "reduction bound"
    if c["kind"] == "bound":
        scale = {"none": "", "input": " + %g u·\\|x\\|" % c["ulp"], "output": " + %g u·max\\|out\\|" % c["ulp"]}[c["scale"]]
        return "≤ %g ULP%s (bound)" % (c["ulp"], scale)
    return "≤ %g ULP (quality %g, half %g)" % (c["ulp"], c["quality"], c["half"])


def dtype_text(ds, groups):
    for g, members in groups.items():
        if list(members) == list(ds):
            return g
    return ", ".join(ds)


def emit_docs(table):
    ops = table["ops"]
    groups = table["dtype_groups"]
    L = []
    w = L.append
    prim = [o for o in ops if o["tier"] == "primitive"]
    comp = [o for o in ops if o["tier"] == "composite"]
    w("# PrimKit op reference")
    w("")
    w("ABI %s — %d ops: %d primitive (every conformant backend implements them), %d composite (optional; each"
      % (table["version"], len(ops), len(prim), len(comp)))
    w("has a normative decomposition into primitives). Generated from `sdk/primops/ops.yaml`; the schema is in")
    w("[op-table.md](op-table.md). No implicit broadcasting or type promotion: use `broadcast_in_dim` and")
    w("`convert_element_type`.")
    w("")
    w("## Dtypes")
    w("")
    w("| id | name | storage | meaning |")
    w("|---:|---|---|---|")
    for d in table["dtypes"]:
        w("| %d | `%s` | %d bits | %s |" % (d["id"], d["name"], d["bits"], d["doc"]))
    w("")
    w("Dtype groups: " + "; ".join("`%s` = %s" % (g, ", ".join(m)) for g, m in groups.items()) + ".")
    w("")
    for tier_name, tier_ops in (("Primitive tier", prim), ("Composite tier", comp)):
        w("## %s" % tier_name)
        w("")
        cats = []
        for o in tier_ops:
            if o["category"] not in cats:
                cats.append(o["category"])
        for cat in cats:
            w("### %s" % cat)
            w("")
            w("| id | op | inputs | outputs | attributes | shape | alias | contract | since | semantics |")
            w("|---:|---|---|---|---|---|---|---|---|---|")
            for o in [x for x in tier_ops if x["category"] == cat]:
                tv = {v: ds for v, ds in o["type_vars"]}
                ins = ", ".join("%s%s: %s" % (x["name"], "…" if x["variadic"] else "", x["type"]) for x in o["inputs"])
                outs = ", ".join("%s: %s" % (x["name"], x["type"]) for x in o["outputs"])
                types = "; ".join("%s ∈ %s" % (v, dtype_text(ds, groups)) for v, ds in tv.items())
                attrs = ", ".join(
                    "%s: %s%s" % (a["name"], a["type"] if a["type"] != "enum" else a["choices"],
                                  (" = %s" % a["default"]) if "default" in a else
                                  (" (required)" if a.get("required") else "")) for a in o["attrs"]) or "—"
                w("| %d | `%s` | %s%s | %s | %s | %s | %s | %s | %s | %s |" % (
                    o["id"], o["name"], ins or "—", (" (%s)" % types) if types else "", outs, attrs, o["shape"],
                    o["alias"], contract_text(o["contract"]) + ("; f32 opmath" if o["opmath"] == "f32" else ""), o["since"], o["doc"].replace("|", "\\|")))
            w("")
    w("## Decompositions of the composite tier")
    w("")
    for o in comp:
        w("### `%s`" % o["name"])
        w("")
        w("```")
        w(o["decomposition"].strip())
        w("```")
        w("")
    body = "\n".join(L)
    return stamp(body.rstrip("\n") + "\n", "<!--", " -->")


def emit_layout(table):
    """X-macro list of every attribute struct field, for the ABI layout freeze test (tests/abi)."""
    L = ["// Every attribute struct and field of primkit_ops.h: PK_LAYOUT_STRUCT(type) then PK_LAYOUT_FIELD(type, field)."]
    for op in table["ops"]:
        if not op["attrs"]:
            continue
        sname = "pk_attrs_%s" % op["name"]
        L.append("PK_LAYOUT_STRUCT(%s)" % sname)
        L.append("PK_LAYOUT_FIELD(%s, struct_size)" % sname)
        for a in op["attrs"]:
            if a["type"] == "ints":
                L.append("PK_LAYOUT_FIELD(%s, num_%s)" % (sname, a["name"]))
            L.append("PK_LAYOUT_FIELD(%s, %s)" % (sname, a["name"]))
    return stamp("\n".join(L) + "\n", "//")


# numpy / torch names of each dtype (None where the library has no such dtype); ml_dtypes covers bf16 and fp8.
PY_DTYPE_NAMES = {
    "bool": ("bool_", "bool"), "u8": ("uint8", "uint8"), "i8": ("int8", "int8"), "i16": ("int16", "int16"),
    "i32": ("int32", "int32"), "i64": ("int64", "int64"), "f16": ("float16", "float16"),
    "bf16": ("bfloat16", "bfloat16"), "f32": ("float32", "float32"), "f64": ("float64", "float64"),
    "c64": ("complex64", "complex64"), "c128": ("complex128", "complex128"),
    "f8e4m3fn": ("float8_e4m3fn", "float8_e4m3fn"), "f8e5m2": ("float8_e5m2", "float8_e5m2"),
}
DLPACK_CODES = {"INT": 0, "UINT": 1, "FLOAT": 2, "BFLOAT": 4, "COMPLEX": 5, "BOOL": 6, "FLOAT8_E4M3FN": 10,
                "FLOAT8_E5M2": 12}


def emit_py_dtypes(table):
    L = ['"""The dtypes of the op table: (name, id, DLPack code, bits, numpy name, torch name)."""', "", "DTYPES = ("]
    for d in table["dtypes"]:
        npn, tn = PY_DTYPE_NAMES.get(d["name"], (None, None))
        L.append("    (%r, %d, %d, %d, %r, %r)," % (d["name"], d["id"], DLPACK_CODES[d["code"]], d["bits"], npn, tn))
    L.append(")")
    return stamp("\n".join(L) + "\n", "#")


def emit_py_stub(table):
    enums = table.get("enums", {})
    pytype = {"i64": "int", "f64": "float", "bool": "bool", "dtype": "DTypeLike", "ints": "Sequence[int]"}
    L = ['"""Type stub of primkit.ops: one function per op of the table (keyword attributes, table defaults)."""',
         "from typing import Any, Literal, Sequence, Tuple, Union", "", "from . import Device, Tensor", "",
         "TensorLike = Any  # primkit.Tensor or any DLPack producer (numpy, torch)",
         "DTypeLike = Union[str, Any]  # 'f32', numpy or torch dtypes", ""]
    for op in table["ops"]:
        params = []
        for x in op["inputs"]:
            if x["variadic"]:
                params.append("*%s: TensorLike" % x["name"])
            else:
                params.append("%s: TensorLike%s" % (x["name"], " = None" if x["optional"] else ""))
        if not any(x["variadic"] for x in op["inputs"]):
            params.append("*")
        for a in op["attrs"]:
            t = pytype.get(a["type"]) or "Literal[%s]" % ", ".join(repr(v) for v in enums[a["choices"]]["values"])
            if "default" in a:
                params.append("%s: %s = %r" % (a["name"], t, a["default"]))
            else:
                params.append("%s: %s" % (a["name"], t))
        params.append("device: Union[Device, str, None] = None")
        ret = "Tensor" if len(op["outputs"]) == 1 else "Tuple[%s]" % ", ".join(["Tensor"] * len(op["outputs"]))
        L.append("def %s(%s) -> %s:" % (op["name"], ", ".join(params), ret))
        L.append('    """%s"""' % op["doc"].replace("\\", "\\\\").replace('"""', "'''"))
        L.append("")
    return stamp("\n".join(L), "#")


def outputs(table):
    return {OUT_HEADER: emit_header(table), OUT_TABLE: emit_table(table), OUT_DOCS: emit_docs(table),
            OUT_LAYOUT: emit_layout(table), OUT_PY_DTYPES: emit_py_dtypes(table), OUT_PY_STUB: emit_py_stub(table)}


def verify_stamp(path, text):
    first, _, body = text.partition("\n")
    m = re.search(r"sha256:([0-9a-f]{64})", first)
    return bool(m) and hashlib.sha256(body.encode("utf-8")).hexdigest() == m.group(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if generated files are stale or hand-edited")
    args = ap.parse_args()
    try:
        table, _ = load_table()
    except TableError as e:
        sys.exit(str(e))
    bad = []
    for path, text in outputs(table).items():
        rel = os.path.relpath(path, ROOT)
        if args.check:
            try:
                with open(path, encoding="utf-8") as f:
                    current = f.read()
            except FileNotFoundError:
                bad.append("%s: missing" % rel)
                continue
            if not verify_stamp(path, current):
                bad.append("%s: edited by hand (its sha256 stamp does not match its content)" % rel)
            elif current != text:
                bad.append("%s: stale (ops.yaml or gen_ops.py changed; run tools/regen)" % rel)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    if bad:
        print("gen_ops.py --check failed:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    if not args.check:
        print("gen_ops.py: %d ops written" % len(table["ops"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
