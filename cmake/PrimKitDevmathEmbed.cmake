# PrimKitDevmathEmbed.cmake — writes files into a C++ include file at build time (cmake -P; primkit_devmath_embed in
# PrimKitDevmath.cmake runs it), for the consumers of the device math that cannot include it as source:
#   MODE=text  each of INPUTS as a raw string `static const char <PREFIX><StemInCamelCase>[]` (the OpenCL backend's program
#              text);
#   MODE=bytes the one INPUT as `alignas(4) static const unsigned char <PREFIX>[]` (LLVM bitcode for the code
#              generator).
# OUT: the file written; it says in its first line that it is generated.
cmake_minimum_required(VERSION 3.20)
string(REPLACE "|" ";" INPUTS "${INPUTS}")  # a list passed through the command line
set(_names "")
foreach(_in IN LISTS INPUTS)
  get_filename_component(_name "${_in}" NAME)
  list(APPEND _names "${_name}")
endforeach()
string(REPLACE ";" ", " _names "${_names}")
set(_out "// Generated at build time by PrimKitDevmathEmbed.cmake from ${_names}: do not edit.\n#pragma once\n\n")
if(MODE STREQUAL "text")
  foreach(_in IN LISTS INPUTS)
    # the stem in CamelCase: igamma_temme.h -> <PREFIX>IgammaTemme
    get_filename_component(_stem "${_in}" NAME_WE)
    string(REPLACE "_" ";" _parts "${_stem}")
    set(_camel "")
    foreach(_part IN LISTS _parts)
      string(SUBSTRING "${_part}" 0 1 _first)
      string(TOUPPER "${_first}" _first)
      string(SUBSTRING "${_part}" 1 -1 _rest)
      string(APPEND _camel "${_first}${_rest}")
    endforeach()
    file(READ "${_in}" _text)
    string(FIND "${_text}" ")PKDM\"" _clash)
    if(NOT _clash EQUAL -1)
      message(FATAL_ERROR "${_in} contains the raw string's end marker")
    endif()
    string(APPEND _out "static const char ${PREFIX}${_camel}[] = R\"PKDM(${_text})PKDM\";\n\n")
  endforeach()
elseif(MODE STREQUAL "bytes")
  file(READ "${INPUTS}" _hex HEX)
  string(LENGTH "${_hex}" _len)
  math(EXPR _size "${_len} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_hex}")
  string(REGEX REPLACE "((0x..,){24})" "\\1\n" _bytes "${_bytes}")
  string(APPEND _out "alignas(4) static const unsigned char ${PREFIX}[${_size}] = {\n${_bytes}};\n")
else()
  message(FATAL_ERROR "PrimKitDevmathEmbed.cmake: MODE must be text or bytes")
endif()
file(WRITE "${OUT}" "${_out}")
