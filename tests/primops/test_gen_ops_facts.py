"""The op-table generator's checks of the per-op facts (reduce, grading, fused_check): each malformed row is
refused with a message that names the row and what is wrong, before any generated file could carry it."""
import copy
import os
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "sdk", "primops"))
import gen_ops  # noqa: E402

with open(gen_ops.TABLE, encoding="utf-8") as f:
    TABLE = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def with_row(name, **changes):
    t = copy.deepcopy(TABLE)
    row = next(o for o in t["ops"] if o["name"] == name)
    for k, v in changes.items():
        if v is None:
            row.pop(k, None)
        else:
            row[k] = v
    return t


def test_the_real_table_normalizes_with_the_facts():
    _, by_name = gen_ops.normalize_table(copy.deepcopy(TABLE))
    assert by_name["any"]["reduce"] == {"combine": "or", "identity": "false"}  # YAML's `false` read as a name
    assert by_name["var"]["reduce"]["combine"] == "line"
    assert by_name["dot_general"]["grading"]["terms"] == "attr_axes"
    assert by_name["dot_general"]["grading"]["terms_attr"] == "lhs_contract"
    assert by_name["softmax"]["grading"]["scale"] == "magnitudes"  # the composites' default
    assert by_name["exp"]["grading"]["scale"] == "output"


@pytest.mark.parametrize("name,changes,message", [
    ("sum", {"reduce": None}, "needs `reduce:"),
    ("sum", {"reduce": {"combine": "add", "identity": "one"}}, "identity of combine add must be zero"),
    ("amax", {"reduce": {"combine": "maximum", "identity": "lowest"}}, "combine must be one of"),
    ("amax", {"reduce": {"combine": ["max"], "identity": "lowest"}}, "combine must be one of"),
    ("exp", {"reduce": {"combine": "add", "identity": "zero"}}, "is for primitive ops of category reduction"),
    ("sum", {"reduce": "lines"}, "reduce must be `line`"),
    ("matmul", {"grading": {"terms": {"attr_axes": "no_such_attr"}}}, "must name an ints attribute"),
    ("matmul", {"grading": {"terms": "diagonal"}}, "grading terms must be one of"),
    ("matmul", {"grading": {"scale": "huge"}}, "grading scale must be one of"),
    ("matmul", {"grading": {"colour": "red"}}, "grading has no field colour"),
    ("exp", {"grading": {"terms": "contraction"}}, "applies to reduction contracts only"),
    ("exp", {"fused_check": True}, "fused_check: true is for composite ops"),
])
def test_malformed_facts_are_refused_naming_the_row(name, changes, message):
    with pytest.raises(gen_ops.TableError) as e:
        gen_ops.normalize_table(with_row(name, **changes))
    assert message in str(e.value)
    assert "op %s" % name in str(e.value)
