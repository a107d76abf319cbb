# Sanitizer builds: PRIMKIT_SANITIZE is a list of -fsanitize= names ("address,undefined", "thread", ...; commas or
# semicolons) applied to every target defined after this file is included: libraries, plugins, tests, tools.
# PRIMKIT_BUILD_FUZZERS (clang only) also instruments every target for coverage (-fsanitize=fuzzer-no-link) so
# that fuzz/ links its libFuzzer harnesses against the same build. tools/run-asan.sh drives both;
# tools/run-tsan.sh drives the ThreadSanitizer build.
#
# Rules the option enforces:
# - UBSan never recovers (-fno-sanitize-recover=all): a report aborts the process, so it fails its test.
# - address and thread (or memory) cannot share a process; asking for both is a configure error.
# - With clang the sanitizer runtime is linked as a shared library (-shared-libsan) into every executable and
#   shared object, so the plugins and libprimkit.so keep linking with -Wl,--no-undefined (their __asan_* /
#   __tsan_* references resolve to the runtime's DT_NEEDED entry), and the runtime's folder is put in the
#   binaries' RUNPATH (-frtlib-add-rpath). GCC links its shared libasan/libtsan/libubsan by default already.
set(PRIMKIT_SANITIZE "" CACHE STRING
    "Sanitizers for every target, a list of -fsanitize= names: address,undefined | thread | undefined | leak ...")
option(PRIMKIT_BUILD_FUZZERS "Build the libFuzzer harnesses in fuzz/ (clang only)" OFF)

if(PRIMKIT_BUILD_FUZZERS AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "PRIMKIT_BUILD_FUZZERS needs clang (libFuzzer); configure with CMAKE_CXX_COMPILER=clang++-19 "
                      "and CMAKE_C_COMPILER=clang-19 (tools/run-asan.sh does)")
endif()

set(PRIMKIT_SANITIZER_LIST "")
if(PRIMKIT_SANITIZE)
  string(REPLACE "," ";" PRIMKIT_SANITIZER_LIST "${PRIMKIT_SANITIZE}")
  string(REPLACE " " "" PRIMKIT_SANITIZER_LIST "${PRIMKIT_SANITIZER_LIST}")
  list(REMOVE_ITEM PRIMKIT_SANITIZER_LIST "")
  list(REMOVE_DUPLICATES PRIMKIT_SANITIZER_LIST)
  foreach(_pk_a address thread memory)
    foreach(_pk_b address thread memory)
      if(NOT _pk_a STREQUAL _pk_b AND _pk_a IN_LIST PRIMKIT_SANITIZER_LIST AND _pk_b IN_LIST PRIMKIT_SANITIZER_LIST)
        message(FATAL_ERROR "PRIMKIT_SANITIZE: '${_pk_a}' and '${_pk_b}' cannot be combined in one build")
      endif()
    endforeach()
  endforeach()
  list(JOIN PRIMKIT_SANITIZER_LIST "," _pk_san_joined)
  set(_pk_san_compile -fsanitize=${_pk_san_joined} -fno-omit-frame-pointer -fno-optimize-sibling-calls)
  set(_pk_san_link -fsanitize=${_pk_san_joined})
  if("undefined" IN_LIST PRIMKIT_SANITIZER_LIST)
    list(APPEND _pk_san_compile -fno-sanitize-recover=all)
    list(APPEND _pk_san_link -fno-sanitize-recover=all)
  endif()
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    list(APPEND _pk_san_link -shared-libsan)
    # The folder of the shared runtimes (Debian's clang keeps them in lib/clang/N/lib/linux, where
    # -frtlib-add-rpath does not look): asked of the compiler for the runtime this build links.
    if("address" IN_LIST PRIMKIT_SANITIZER_LIST)
      set(_pk_rt asan)
    elseif("thread" IN_LIST PRIMKIT_SANITIZER_LIST)
      set(_pk_rt tsan)
    elseif("memory" IN_LIST PRIMKIT_SANITIZER_LIST)
      set(_pk_rt msan)
    else()
      set(_pk_rt ubsan_standalone)
    endif()
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libclang_rt.${_pk_rt}-${CMAKE_SYSTEM_PROCESSOR}.so
                    OUTPUT_VARIABLE _pk_rt_file OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(IS_ABSOLUTE "${_pk_rt_file}" AND EXISTS "${_pk_rt_file}")
      get_filename_component(_pk_rt_dir "${_pk_rt_file}" DIRECTORY)
      list(APPEND _pk_san_link -Wl,-rpath,${_pk_rt_dir})
    else()
      message(WARNING "PRIMKIT_SANITIZE: libclang_rt.${_pk_rt} not found (Debian: libclang-rt-19-dev)")
    endif()
  endif()
  add_compile_options(${_pk_san_compile})
  add_link_options(${_pk_san_link})
  # Code that must know (timeouts scaled for the slower instrumented build, a test skipped with its reason).
  add_compile_definitions(PRIMKIT_SANITIZED=1)
  message(STATUS "PrimKit: sanitizers on every target: ${_pk_san_joined}")
endif()

if(PRIMKIT_BUILD_FUZZERS)
  add_compile_options(-fsanitize=fuzzer-no-link)
  message(STATUS "PrimKit: every target instrumented for libFuzzer (fuzz/ is built)")
endif()
