# evokit_stable_headers(SRC_INCLUDE SUBDIR DEST OUT_VAR): copies SRC_INCLUDE/SUBDIR
# into DEST and sets OUT_VAR to DEST, the include directory to compile with.
#
# For headers that come from pip's isolated build environment (pybind11,
# MuJoCo's mujoco-core), whose path is new on every `pip install`: compiled
# against that path, every object using them would be rebuilt each time.
# file(COPY) keeps the files' timestamps and skips a file whose copy has the
# same timestamp, so the same version of the headers leaves the copies
# untouched and nothing is recompiled; another version replaces them.
function(evokit_stable_headers src subdir dest out)
  file(COPY "${src}/${subdir}" DESTINATION "${dest}")
  set(${out} "${dest}" PARENT_SCOPE)
endfunction()
