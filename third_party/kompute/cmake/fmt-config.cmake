# fmt for Kompute's build inside dmlvk's (CMakeLists.txt sets FMT_INCLUDE to PyPI's cmeel-fmt
# headers): header-only, so the extension needs no libfmt at run time.
if(NOT TARGET fmt::fmt)
  add_library(fmt::fmt INTERFACE IMPORTED)
  set_target_properties(fmt::fmt PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${FMT_INCLUDE}"
    INTERFACE_COMPILE_DEFINITIONS "FMT_HEADER_ONLY=1")
endif()
set(fmt_FOUND TRUE)
