# `pip install .` (scikit-build-core): the extension is built by a nested,
# ordinary CMake build of this project in a persistent directory,
# EVOKIT_CMAKE_BUILD_DIR (default build-py/cmake in the source tree), which
# this outer build configures, builds and installs from.
#
# Why nested: pip builds in a new isolated environment every time, and
# scikit-build-core then clears CMakeFiles/ of its own build directory (the
# cached paths of the old environment are gone), which holds every object
# file: each `pip install` recompiled everything. The nested build is never
# cleared, and never sees a path of the isolated environment: pybind11's
# headers (and MuJoCo's, when they come from the build requirements) are
# copied into it with their timestamps (cmake/stable_headers.cmake), so an
# unchanged file is not recompiled. A re-install with no change reconfigures
# and relinks nothing.
#
# -C cmake.define.EVOKIT_BUILD_TESTS=ON also builds the C++ tests and the io
# component there, registered with CTest (`ctest --test-dir build-py/cmake`):
# the README's test command builds everything once.
set(EVOKIT_CMAKE_BUILD_DIR "${CMAKE_CURRENT_SOURCE_DIR}/build-py/cmake" CACHE PATH
    "The persistent build directory of the extension (and of the C++ tests)")
option(EVOKIT_BUILD_TESTS "Also build the C++ unit tests and the io component there" OFF)

set(_inner_args
  -DEVOKIT_BUILD_PYTHON=ON
  -DEVOKIT_BUILD_TESTS=${EVOKIT_BUILD_TESTS}
  -DEVOKIT_BUILD_IO=${EVOKIT_BUILD_TESTS}
  -DEVOKIT_INSTALL=${EVOKIT_BUILD_TESTS}
  -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE})
# What scikit-build-core decided, passed on (the interpreter, its headers, the
# build tool), and what a user may set with -C cmake.define.NAME=VALUE.
foreach(_var Python_EXECUTABLE Python_ROOT_DIR Python_INCLUDE_DIR Python3_EXECUTABLE
             Python3_ROOT_DIR Python3_INCLUDE_DIR CMAKE_MAKE_PROGRAM CMAKE_CXX_COMPILER
             CMAKE_CXX_COMPILER_LAUNCHER CMAKE_CXX_FLAGS EVOKIT_MUJOCO_INCLUDE)
  if(DEFINED ${_var} AND NOT "${${_var}}" STREQUAL "")
    list(APPEND _inner_args "-D${_var}=${${_var}}")
  endif()
endforeach()

# pybind11 from the build requirements: its headers only.
execute_process(
  COMMAND "${Python_EXECUTABLE}" -c "import pybind11; print(pybind11.get_include())"
  OUTPUT_VARIABLE _pybind11_include OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE _status)
if(NOT _status EQUAL 0 OR NOT EXISTS "${_pybind11_include}/pybind11/pybind11.h")
  message(FATAL_ERROR "evokit: pybind11 (a build requirement) was not found by ${Python_EXECUTABLE}")
endif()
list(APPEND _inner_args "-DEVOKIT_PYBIND11_INCLUDE=${_pybind11_include}")

# The CMake that configures the nested build is written into its build rules
# (every static library's link step calls it): one from pip's isolated
# environment, new on every install, would relink everything each time. So
# the first `cmake` program on PATH outside that environment, when it is
# recent enough; else this one. Scripts are passed over: a pyenv shim or a
# PyPI `cmake` entry point imports the `cmake` package, which in the isolated
# environment is the temporary one again.
set(_evokit_cmake "${CMAKE_COMMAND}")
get_filename_component(_isolated "${CMAKE_COMMAND}" DIRECTORY)
string(REGEX REPLACE "/(normal|overlay)/.*$" "" _isolated "${_isolated}")
if(_isolated MATCHES "pip-build-env-")
  string(REPLACE ":" ";" _path "$ENV{PATH}")
  foreach(_dir IN LISTS _path)
    if(_dir MATCHES "^${_isolated}" OR NOT EXISTS "${_dir}/cmake" OR IS_DIRECTORY "${_dir}/cmake")
      continue()
    endif()
    file(READ "${_dir}/cmake" _magic LIMIT 4 HEX)
    if(NOT _magic STREQUAL "7f454c46")  # an ELF program
      continue()
    endif()
    execute_process(COMMAND "${_dir}/cmake" --version OUTPUT_VARIABLE _version
                    RESULT_VARIABLE _status ERROR_QUIET)
    if(_status EQUAL 0 AND _version MATCHES "cmake version ([0-9.]+)"
       AND NOT CMAKE_MATCH_1 VERSION_LESS 3.18)
      set(_evokit_cmake "${_dir}/cmake")
      break()
    endif()
  endforeach()
endif()

message(STATUS "evokit: building in ${EVOKIT_CMAKE_BUILD_DIR} with ${_evokit_cmake} "
               "(C++ tests: ${EVOKIT_BUILD_TESTS})")
execute_process(
  COMMAND "${_evokit_cmake}" -S "${CMAKE_CURRENT_SOURCE_DIR}" -B "${EVOKIT_CMAKE_BUILD_DIR}"
          -G "${CMAKE_GENERATOR}" ${_inner_args}
  RESULT_VARIABLE _status)
if(NOT _status EQUAL 0)
  message(FATAL_ERROR "evokit: configuring ${EVOKIT_CMAKE_BUILD_DIR} failed (see above)")
endif()

add_custom_target(evokit_nested ALL
  COMMAND "${_evokit_cmake}" --build "${EVOKIT_CMAKE_BUILD_DIR}"
  COMMENT "Building ${EVOKIT_CMAKE_BUILD_DIR}"
  USES_TERMINAL)
# The wheel gets the extension and evokit_pb2 (component python) only.
install(CODE "
  execute_process(COMMAND \"${_evokit_cmake}\" --install \"${EVOKIT_CMAKE_BUILD_DIR}\"
                          --component python --prefix \"\${CMAKE_INSTALL_PREFIX}\"
                  RESULT_VARIABLE _evokit_status)
  if(NOT _evokit_status EQUAL 0)
    message(FATAL_ERROR \"evokit: installing from ${EVOKIT_CMAKE_BUILD_DIR} failed\")
  endif()")
