# Generates the OpenGL 3.3 core loader with Debian's python3-glad at configure time, into the
# build tree. glad lives in the system interpreter's packages, so a python3 that comes earlier
# on PATH (a virtualenv, pyenv) may not have it: try the system one first.
set(ATTNVIZ_GLAD_DIR ${CMAKE_BINARY_DIR}/glad)
set(_glad_python "")
foreach(candidate /usr/bin/python3 python3)
  find_program(_py NAMES ${candidate} NO_CACHE)
  if(_py)
    execute_process(COMMAND ${_py} -c "import glad" RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
    if(_rc EQUAL 0)
      set(_glad_python ${_py})
      break()
    endif()
  endif()
  unset(_py)
endforeach()
if(NOT _glad_python)
  message(FATAL_ERROR "No python3 with the glad module found: install Debian's python3-glad and python3-jinja2")
endif()
if(NOT EXISTS ${ATTNVIZ_GLAD_DIR}/src/gl.c)
  # --reproducible: use the bundled Khronos specs instead of downloading them.
  execute_process(
    COMMAND ${_glad_python} -m glad --quiet --reproducible --api gl:core=3.3 --extensions=GL_KHR_debug
            --out-path ${ATTNVIZ_GLAD_DIR} c
    RESULT_VARIABLE _rc ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "glad failed to generate the GL loader: ${_err}")
  endif()
endif()
add_library(glad_gl STATIC ${ATTNVIZ_GLAD_DIR}/src/gl.c)
target_include_directories(glad_gl SYSTEM PUBLIC ${ATTNVIZ_GLAD_DIR}/include)
