# evokit_stable_headers(SRC_INCLUDE SUBDIR DEST OUT_VAR): copies SRC_INCLUDE/SUBDIR
# into DEST and sets OUT_VAR to DEST, the include directory to compile with.
#
# For headers that come from pip's isolated build environment (pybind11, and
# MuJoCo's from the build requirement `mujoco`), whose path is new on every
# `pip install` (and whose files are new too: pip does not keep a wheel's
# timestamps): compiled against that path, every object using them would be
# rebuilt each time. A header is
# written only when its content differs (configure_file COPYONLY), so the same
# version of the headers leaves the copies and their timestamps untouched and
# nothing is recompiled; another version replaces the files that changed.
function(evokit_stable_headers src subdir dest out)
  file(GLOB_RECURSE _headers RELATIVE "${src}" "${src}/${subdir}/*")
  foreach(_header IN LISTS _headers)
    configure_file("${src}/${_header}" "${dest}/${_header}" COPYONLY)
  endforeach()
  set(${out} "${dest}" PARENT_SCOPE)
endfunction()
