# primkit_add_backend(NAME SOURCES...) — builds libprimkit_backend_<NAME>.so, a plugin that exports only
# pk_backend_entry. Used by the reference backends and by out-of-tree backends (installed with the package).
function(primkit_add_backend name)
  add_library(primkit_backend_${name} MODULE ${ARGN})
  set_target_properties(primkit_backend_${name} PROPERTIES PREFIX "lib" OUTPUT_NAME primkit_backend_${name}
                        CXX_VISIBILITY_PRESET hidden C_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  if(DEFINED PRIMKIT_PLUGIN_OUTPUT_DIRECTORY)
    set_target_properties(primkit_backend_${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${PRIMKIT_PLUGIN_OUTPUT_DIRECTORY})
  endif()
  if(TARGET PrimKit::headers)
    target_link_libraries(primkit_backend_${name} PRIVATE PrimKit::headers)
  endif()
  if(DEFINED PRIMKIT_INSTALL_PLUGINDIR AND PROJECT_NAME STREQUAL "PrimKit")
    install(TARGETS primkit_backend_${name} LIBRARY DESTINATION ${PRIMKIT_INSTALL_PLUGINDIR})
  endif()
  # A plugin must resolve all its symbols at load time; an unresolved one is a load error, not a late crash.
  target_link_options(primkit_backend_${name} PRIVATE -Wl,--no-undefined -Wl,-z,now)
endfunction()
