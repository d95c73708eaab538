# Writes OUT, a C++ file that returns every file matching DIR/GLOB as a raw string literal:
#   const std::vector<TYPE>& FUNCTION() in namespace NAMESPACE, declared in HEADER,
# where TYPE is an aggregate of two const char*: the file's stem (its name with KEEP_EXTENSION)
# and its text.
file(GLOB FILES "${DIR}/${GLOB}")
list(SORT FILES)
set(body "")
foreach(f IN LISTS FILES)
  if(KEEP_EXTENSION)
    get_filename_component(id "${f}" NAME)
  else()
    get_filename_component(id "${f}" NAME_WE)
  endif()
  file(READ "${f}" text)
  string(APPEND body "      {\"${id}\", R\"attnviz_embed(${text})attnviz_embed\"},\n")
endforeach()
file(WRITE "${OUT}.tmp" "// Generated from ${GLOB} files; do not edit.\n#include \"${HEADER}\"\n\nnamespace ${NAMESPACE} {\n\nconst std::vector<${TYPE}>& ${FUNCTION}() {\n  static const std::vector<${TYPE}> files = {\n${body}  };\n  return files;\n}\n\n}  // namespace ${NAMESPACE}\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
