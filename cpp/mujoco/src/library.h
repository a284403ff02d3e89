// libmujoco opened at run time (internal to the MuJoCo component): the few
// functions the tasks call, resolved with dlsym, and MuJoCo's errors turned
// into a return value instead of its default handler's exit().
#pragma once

#include <mujoco/mujoco.h>

#include <string>

namespace evokit::mujoco {

struct Library {
  std::string path;
  std::string version;  // mj_versionString()
  decltype(&::mj_copyModel) copy_model = nullptr;
  decltype(&::mj_deleteModel) delete_model = nullptr;
  decltype(&::mj_makeData) make_data = nullptr;
  decltype(&::mj_deleteData) delete_data = nullptr;
  decltype(&::mj_resetData) reset_data = nullptr;
  decltype(&::mj_forward) forward = nullptr;
  decltype(&::mj_step) step = nullptr;
  decltype(&::mj_rnePostConstraint) rne_post_constraint = nullptr;
  // MuJoCo's thread-local log handler (not in its public headers), or null
  // when the library lacks it: then an error takes MuJoCo's own handler.
  mjfLogHandler (*set_tls_log_handler)(mjfLogHandler) = nullptr;

  // body(context) with a MuJoCo error (mju_error: it does not return)
  // caught on this thread: returns "" when body returned, else MuJoCo's
  // message on one line. body must call only this library's functions between C
  // frames: the error unwinds them with longjmp, which runs no destructor.
  // MuJoCo's warnings on this thread are dropped meanwhile (mjData counts
  // them in `warning`): the default handler would print them, and write
  // MUJOCO_LOG.TXT, from every thread.
  std::string guarded(void (*body)(void*), void* context) const;

  template <class F>
  std::string guarded(F& body) const {
    return guarded([](void* f) { (*static_cast<F*>(f))(); }, &body);
  }
};

// The library at `path`, opened once per process and never closed (the
// `mujoco` Python package keeps it loaded anyway). Throws std::runtime_error
// with a one-line reason when it does not open, lacks a function, or its
// mj_version() is not mjVERSION_HEADER.
const Library& open_library(const std::string& path);

// "4.0.0" for MuJoCo's version number 4000000.
std::string format_version(int version);

}  // namespace evokit::mujoco
