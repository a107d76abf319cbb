#!/usr/bin/env python3
"""Property-based test of the op-table generator (sdk/primops/gen_ops.py) on malformed tables.

Hypothesis mutates a copy of a slice of the real ops.yaml (values replaced by values of another type, keys deleted,
rows duplicated) and also feeds it arbitrary YAML text. The property: the generator either produces its outputs or
raises gen_ops.TableError, whose message names what is wrong; never another exception (a traceback for whoever
edits the table). Run by CTest (primops.gen_ops_fuzz) with a fixed example budget; PRIMKIT_HYPOTHESIS_EXAMPLES
raises it (tools/fuzz-long.sh).
"""
import copy
import os
import sys
import tempfile

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "sdk", "primops"))
import gen_ops  # noqa: E402

EXAMPLES = int(os.environ.get("PRIMKIT_HYPOTHESIS_EXAMPLES", "100"))


def _slice_of_table():
    """The real table's dtypes, groups and enums, with a slice of its ops that still loads: the primitives the
    chosen composites call, plus some of every category (the whole table takes ~0.4 s per load)."""
    with open(gen_ops.TABLE, encoding="utf-8") as f:
        table = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    ops = table["ops"]
    composites = [o for o in ops if o.get("tier") == "composite"][::12]
    called = set()
    for c in composites:
        called.update(t[1] for t in gen_ops.tokenize(c.get("decomposition", ""), c) if t[0] == "id")
    prims = [o for o in ops if o.get("tier", "primitive") == "primitive"]
    keep = [o for o in prims if o["name"] in called] + prims[::10] + composites
    seen, rows = set(), []
    for o in keep:
        if o["name"] not in seen:
            seen.add(o["name"])
            rows.append(o)
    table["ops"] = rows
    gen_ops.normalize_table(copy.deepcopy(table))  # the slice itself is valid
    return table


BASE = _slice_of_table()

KEYS = ["id", "name", "category", "tier", "types", "inputs", "outputs", "attrs", "shape", "alias", "contract", "doc",
        "since", "example", "decomposition", "opmath", "type", "default", "min", "max", "dim_of", "choices",
        "variadic", "optional", "required", "values", "bits", "code", "ulp", "bound", "half", "scale"]
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=True),
    st.text(max_size=10),
    st.sampled_from(["f32", "T", "numeric", "float", "custom", "elementwise", "ints", "i64", "f64", "enum", "bool",
                     "dtype", "attr:dtype", "real_of:T", "x: f32[2,3]", "a: f32[2,3]; dim=1", "return a",
                     "y = add(a, a)\nreturn y", "composite", "primitive", "exact", "unary", "binary", "reduction",
                     "view", "inplace", "new", "1.0", "[1, 2]", "dim=", ":", "[", "]"]))
VALUES = st.recursive(SCALARS, lambda c: st.one_of(st.lists(c, max_size=3),
                                                   st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=6)),
                                                                   c, max_size=3)), max_leaves=6)


@st.composite
def mutated_tables(draw):
    table = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        parent, key, node = None, None, table
        for _ in range(draw(st.integers(min_value=1, max_value=5))):
            if isinstance(node, dict) and node:
                k = draw(st.sampled_from(sorted(node, key=str)))
            elif isinstance(node, list) and node:
                k = draw(st.integers(min_value=0, max_value=len(node) - 1))
            else:
                break
            parent, key, node = node, k, node[k]
        if parent is None:
            continue
        action = draw(st.sampled_from(["replace", "replace", "delete", "duplicate", "add_key"]))
        if action == "replace":
            parent[key] = draw(VALUES)
        elif action == "delete":
            del parent[key]
        elif action == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
        elif action == "add_key" and isinstance(node, dict):
            node[draw(st.sampled_from(KEYS))] = draw(VALUES)
    return table


def generate(table):
    """The generator's whole pipeline on a table: TableError is the only acceptable failure."""
    try:
        t, _ = gen_ops.normalize_table(table)
        gen_ops.outputs(t)
    except gen_ops.TableError as e:
        assert str(e).startswith("ops.yaml"), "a TableError names the table: %s" % e
        assert len(str(e)) > len("ops.yaml: "), "a TableError says what is wrong"


SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(mutated_tables())
def test_malformed_tables_raise_table_error(table):
    generate(table)


@SETTINGS
@given(st.one_of(st.text(max_size=200),
                 st.sampled_from(["", "[]", "- 1", "dtypes: 3", "ops: {}", "{dtypes: [], dtype_groups: {}, ops: [1]}",
                                  "dtypes: [{id: 0, name: f32}]\ndtype_groups: {g: [f32]}\nops: [{id: 1}]", "\t:",
                                  "a: b: c", "!!python/object:os.system x"])))
def test_malformed_yaml_text_raises_table_error(text):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False, encoding="utf-8") as f:
        f.write(text)
        path = f.name
    try:
        gen_ops.load_table(path)
    except gen_ops.TableError as e:
        assert str(e).startswith("ops.yaml") or path in str(e)
    finally:
        os.unlink(path)


def test_real_table_still_generates():
    t, _ = gen_ops.load_table()
    assert len(gen_ops.outputs(t)) == 6


if __name__ == "__main__":
    import pytest
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
