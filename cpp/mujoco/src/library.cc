// libmujoco opened at run time (see library.h).
#include "library.h"

#include <dlfcn.h>

#include <csetjmp>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace evokit::mujoco {

namespace {

// The innermost guarded() call of this thread, and its error message.
thread_local std::jmp_buf* t_jump = nullptr;
thread_local char t_message[sizeof(mjLogMessage::subject)];

void on_log(const mjLogMessage* message) {
  if (message->level >= mjLOG_ERROR && t_jump != nullptr) {
    std::strncpy(t_message, message->subject, sizeof(t_message) - 1);
    t_message[sizeof(t_message) - 1] = '\0';
    std::longjmp(*t_jump, 1);
  }
}

template <class Fn>
void resolve(void* handle, const std::string& path, const char* name, Fn& fn) {
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    throw std::runtime_error(path + " has no " + name + ": not a MuJoCo library");
  }
  fn = reinterpret_cast<Fn>(symbol);
}

std::unique_ptr<Library> resolve_all(void* handle, const std::string& path);

std::unique_ptr<Library> load(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    throw std::runtime_error("cannot open the MuJoCo library " + path + ": " +
                             (reason != nullptr ? reason : "dlopen failed"));
  }
  try {
    return resolve_all(handle, path);
  } catch (...) {
    dlclose(handle);
    throw;
  }
}

std::unique_ptr<Library> resolve_all(void* handle, const std::string& path) {
  auto lib = std::make_unique<Library>();
  lib->path = path;
  decltype(&::mj_version) version = nullptr;
  decltype(&::mj_versionString) version_string = nullptr;
  resolve(handle, path, "mj_version", version);
  resolve(handle, path, "mj_versionString", version_string);
  // Struct layouts come from the headers: any other version is refused
  // before a single field is read.
  if (version() != mjVERSION_HEADER) {
    throw std::runtime_error(path + " is MuJoCo " + format_version(version()) +
                             ", EvoKit was built with the headers of MuJoCo " +
                             format_version(mjVERSION_HEADER) +
                             "; native MuJoCo needs that release: pip install 'mujoco==" +
                             format_version(mjVERSION_HEADER) + "'");
  }
  lib->version = version_string();
  resolve(handle, path, "mj_copyModel", lib->copy_model);
  resolve(handle, path, "mj_deleteModel", lib->delete_model);
  resolve(handle, path, "mj_makeData", lib->make_data);
  resolve(handle, path, "mj_deleteData", lib->delete_data);
  resolve(handle, path, "mj_resetData", lib->reset_data);
  resolve(handle, path, "mj_forward", lib->forward);
  resolve(handle, path, "mj_step", lib->step);
  resolve(handle, path, "mj_rnePostConstraint", lib->rne_post_constraint);
  if (void* symbol = dlsym(handle, "_mjPRIVATE_setTlsLogHandler")) {
    lib->set_tls_log_handler = reinterpret_cast<mjfLogHandler (*)(mjfLogHandler)>(symbol);
  }
  return lib;
}

// MuJoCo's message on one line: each line break and the indentation after
// it become "; ".
std::string one_line(const char* message) {
  std::string out;
  for (const char* c = message; *c != '\0'; ++c) {
    if (*c != '\n') {
      out += *c;
      continue;
    }
    while (c[1] == ' ') ++c;
    out += "; ";
  }
  return out;
}

}  // namespace

std::string format_version(int version) {
  return std::to_string(version / 1000000) + "." + std::to_string(version / 1000 % 1000) + "." +
         std::to_string(version % 1000);
}

std::string Library::guarded(void (*body)(void*), void* context) const {
  if (set_tls_log_handler == nullptr) {
    body(context);
    return "";
  }
  std::jmp_buf jump;
  std::jmp_buf* const outer = t_jump;
  const mjfLogHandler previous = set_tls_log_handler(&on_log);
  t_jump = &jump;
  volatile bool failed = false;
  if (setjmp(jump) == 0) {
    body(context);
  } else {
    failed = true;
  }
  t_jump = outer;
  set_tls_log_handler(previous);
  return failed ? one_line(t_message) : std::string();
}

const Library& open_library(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Library>> libraries;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = libraries.find(path);
  if (it == libraries.end()) it = libraries.emplace(path, load(path)).first;
  return *it->second;
}

}  // namespace evokit::mujoco
