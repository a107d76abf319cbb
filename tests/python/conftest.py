"""pytest set-up for the Python package: the package under test is the build tree's (PYTHONPATH=<build>/python,
set by tools/run-tests.sh) or an installed one."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # opinfo_check.py beside the tests

primkit = pytest.importorskip("primkit")


def device_labels():
    return [d.label for d in primkit.devices()]


def pytest_generate_tests(metafunc):
    # `device` parametrizes over every loaded device of the reference backends; PRIMKIT_TEST_DEVICES narrows it.
    if "device" in metafunc.fixturenames:
        wanted = os.environ.get("PRIMKIT_TEST_DEVICES")
        labels = [l for l in device_labels() if l.split(":")[0] in ("cpu", "opencl", "cuda-emu")]
        if wanted:
            labels = [l for l in labels if l.split(":")[0] in wanted.split(",")]
        metafunc.parametrize("device", labels)
