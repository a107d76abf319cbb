# Sanitizer builds: PRIMKIT_SANITIZE is a list of -fsanitize= names ("address,undefined", "thread", ...; commas
# or semicolons) applied to every target defined after this file is included: libraries, plugins, tests, tools.
# With clang the sanitizer runtime is linked as a shared library (-shared-libsan) into every executable and shared
# object, so the plugins and libprimkit.so keep linking with -Wl,--no-undefined (their __tsan_* references resolve
# to the runtime's DT_NEEDED entry), and the runtime's folder goes into the binaries' RUNPATH (-frtlib-add-rpath).
# GCC links its shared libtsan/libasan by default already. tools/run-tsan.sh drives the ThreadSanitizer build.
set(PRIMKIT_SANITIZE "" CACHE STRING "Sanitizers for every target, a list of -fsanitize= names: address,undefined | thread")

if(PRIMKIT_SANITIZE)
  string(REPLACE ";" "," _pk_san_joined "${PRIMKIT_SANITIZE}")
  string(REPLACE " " "" _pk_san_joined "${_pk_san_joined}")
  set(_pk_san_link -fsanitize=${_pk_san_joined})
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    list(APPEND _pk_san_link -shared-libsan -frtlib-add-rpath)
    # -frtlib-add-rpath names only the per-target runtime folder; Debian's clang keeps its runtimes in the older
    # lib/linux layout, which it leaves out: put the folder of the compiler's runtime libraries in the RUNPATH.
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-libgcc-file-name --rtlib=compiler-rt
                    OUTPUT_VARIABLE _pk_rt_lib OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_pk_rt_lib)
      get_filename_component(_pk_rt_dir "${_pk_rt_lib}" DIRECTORY)
      list(APPEND _pk_san_link "-Wl,-rpath,${_pk_rt_dir}")
    endif()
  endif()
  add_compile_options(-fsanitize=${_pk_san_joined} -fno-omit-frame-pointer)
  add_link_options(${_pk_san_link})
  # Code that must know (timeouts scaled for the slower instrumented build).
  add_compile_definitions(PRIMKIT_SANITIZED=1)
  message(STATUS "PrimKit: sanitizers on every target: ${_pk_san_joined}")
endif()
