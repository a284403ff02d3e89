// Gymnasium's MuJoCo locomotion tasks natively (the MuJoCo component,
// cpp/mujoco): MujocoEnv is a NativeEnv (bind_envs.cc) whose episodes start
// from a state, qpos then qvel. The same names exist whether or not the
// component was built with MuJoCo: without it, MujocoEnv() raises
// RuntimeError with the reason, mujoco_tasks() is empty and
// mujoco_header_version() is 0.
#include <evokit/mujoco/env.h>

#include <memory>
#include <string>

#include "pybind11.h"

namespace evokit::bindings {

namespace mj = evokit::mujoco;

void bind_mujoco(py::module_& m) {
  m.def("mujoco_header_version", &mj::header_version,
        "The MuJoCo version whose headers EvoKit was built with (mjVERSION_HEADER: 4000000 "
        "for 4.0.0), or 0 when it was built without native MuJoCo.");
  m.def("mujoco_unavailable_reason", &mj::unavailable_reason,
        "Why this build has no native MuJoCo, or '' when it has.");
  m.def(
      "mujoco_tasks",
      [] {
        py::list out;
        for (const mj::MujocoTaskInfo* t : mj::tasks()) {
          py::dict d = env_spec_dict(*t->spec);
          d["nq"] = t->nq;
          d["nv"] = t->nv;
          d["reset_noise_scale"] = t->reset_noise_scale;
          d["normal_qvel"] = t->normal_qvel;
          out.append(d);
        }
        return out;
      },
      "The tasks MujocoEnv runs natively: native_envs()'s dict for each, with nq, nv and how "
      "gymnasium's reset_model draws the initial state (qpos = init_qpos + uniform(-s, s), "
      "qvel = init_qvel + uniform(-s, s), or s * standard_normal with normal_qvel; s = "
      "reset_noise_scale).");

  py::class_<mj::Env, Env, std::shared_ptr<mj::Env>>(
      m, "MujocoEnv",
      "A gymnasium MuJoCo task run natively, on a copy of gymnasium's model, by the libmujoco "
      "the mujoco package loaded (opened at run time, its version checked). Its episodes start "
      "from reset_state(np.concatenate([qpos, qvel])).")
      .def(py::init([](const std::string& task, const std::string& library,
                       std::uintptr_t model_address) {
             return mj::load_env(task, library, model_address);
           }),
           py::arg("task"), py::arg("library"), py::arg("model_address"),
           "task: the name of one of mujoco_tasks(); library: the path of the libmujoco the "
           "mujoco package loaded; model_address: gymnasium's env.unwrapped.model._address "
           "(copied). RuntimeError with the reason when native MuJoCo cannot run (built without "
           "it, another MuJoCo version, no such library); ValueError for an unknown task or a "
           "model of other sizes.")
      .def_property_readonly("task", [](const mj::Env& env) { return env.spec().name; })
      .def_property_readonly("library_version", &mj::Env::library_version)
      .def_property_readonly("nq", &mj::Env::nq)
      .def_property_readonly("nv", &mj::Env::nv);
}

}  // namespace evokit::bindings
