# PrimKitDevmath.cmake — primkit_devmath_embed(), for the consumers of the device math that cannot include it as
# source: an OpenCL-style backend embeds the files' text in its programs, a code generator embeds their bitcode.
# Included by the source tree (sdk/devmath) and by the installed package (PrimKitConfig.cmake), so a vendor's
# backend embeds the device math exactly as the reference OpenCL backend does. The script it runs,
# PrimKitDevmathEmbed.cmake, lies beside this file.

# primkit_devmath_embed(<target> MODE text|bytes PREFIX <name> OUT <file> INPUTS <files> [DEPENDS <files>]):
# generates OUT from INPUTS before <target> compiles (MODE text: one raw string per input, named PREFIX + the
# file's stem; MODE bytes: the one input as an aligned byte array named PREFIX) and puts OUT's directory on the
# target's include path. For the device math's text in dependency order, pass INPUTS ${PRIMKIT_DEVMATH_FILES}.
function(primkit_devmath_embed target)
  cmake_parse_arguments(E "" "MODE;PREFIX;OUT" "INPUTS;DEPENDS" ${ARGN})
  string(REPLACE ";" "|" _inputs "${E_INPUTS}")
  set(_script ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/PrimKitDevmathEmbed.cmake)
  add_custom_command(
    OUTPUT ${E_OUT}
    COMMAND ${CMAKE_COMMAND} -DMODE=${E_MODE} -DPREFIX=${E_PREFIX} -DINPUTS=${_inputs} -DOUT=${E_OUT}
            -P ${_script}
    DEPENDS ${E_INPUTS} ${E_DEPENDS} ${_script}
    COMMENT "Embedding ${E_PREFIX}"
    VERBATIM)
  target_sources(${target} PRIVATE ${E_OUT})
  get_filename_component(_dir ${E_OUT} DIRECTORY)
  target_include_directories(${target} PRIVATE ${_dir})
endfunction()
