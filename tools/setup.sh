#!/usr/bin/env bash
# Installs everything PrimKit needs on a fresh Debian 12 machine. Idempotent: skips what is present.
# --peers also installs the benchmarks' peer, libtorch (Debian's libtorch-dev, about 1 GB; tools/run-bench.sh), with
# OpenBLAS (OpenMP flavour) as the system BLAS: Debian's libtorch calls libblas.so.3 for f32 matmul, which is
# otherwise the netlib reference BLAS (about 4 GFLOP/s here, 20-30x below oneDNN): no peer anyone would run.
# Open MPI carries the collectives extension's MPI engine (libprimkit_engine_mpi.so) and its multi-rank tests.
# clang-19 with its runtimes (ASan, UBSan, TSan, libFuzzer) builds the sanitizer runs (tools/run-asan.sh, run-tsan.sh).
# LLVM is pinned to 19: Debian's default (14) emits invalid PTX for sm_90 and crashes next to PoCL's LLVM.
set -euo pipefail

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  clang-19 libclang-rt-19-dev
  clang-format
  libgtest-dev libgmock-dev libbenchmark-dev
  llvm-19-dev libzstd-dev
  libcli11-dev
  libmpfr-dev
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
  libopenmpi-dev openmpi-bin
)
# The Python package (nanobind, scikit-build-core), its tests (pytest) and the PyTorch bridge's peers and models
# (torch, torchvision, transformers from PyPI: the CUDA build of torch is what PyPI serves, about 3 GB with its
# NVIDIA wheels; nothing else is reachable).
# oneDNN 3 for the CPU backend comes from PyPI too: Intel's CPU-only build with GNU OpenMP (headers, CMake config
# and libdnnl.so.3 land in the Python prefix, where CMake looks). Debian 12 has only oneDNN 2.7, and Intel's newer
# PyPI builds (onednn 2025+) are SYCL builds that pull about 600 MB of compiler, SYCL and OpenCL runtimes.
PY_PACKAGES=(pyyaml numpy ml_dtypes mpmath nanobind scikit-build-core pytest "torch>=2.4" torchvision transformers
             expecttest hypothesis onednn-devel-cpu-gomp==2023.2.0)
for arg in "$@"; do
  case "$arg" in
    --peers) APT_PACKAGES+=(libtorch-dev libopenblas0-openmp) ;;
    *) echo "setup: unknown option $arg (known: --peers)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing apt packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The python3 first on PATH is the one the build and tests use (tools/primkit-python picks the same).
PY=${PRIMKIT_PYTHON:-python3}
if ! "$PY" -c 'import yaml, numpy, ml_dtypes, mpmath, nanobind, scikit_build_core, pytest, torch, torchvision, transformers, expecttest, hypothesis' 2>/dev/null ||
   ! "$PY" -c 'import os, sys; assert os.path.isfile(os.path.join(sys.prefix, "lib/cmake/dnnl/dnnl-config.cmake"))' 2>/dev/null; then
  echo "setup: installing python packages into $("$PY" -c 'import sys; print(sys.executable)'): ${PY_PACKAGES[*]}"
  "$PY" -m pip install -q "${PY_PACKAGES[@]}" || "$PY" -m pip install -q --break-system-packages "${PY_PACKAGES[@]}"
fi
echo "setup: ok"
