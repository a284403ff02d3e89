// The native environments (evokit/env.h): the registry, an env's episodes
// stepped by hand, whole episodes of a population (env_rollouts), and
// CartPole's state functions. MujocoEnv (bind_mujoco.cc) is a NativeEnv.
#include <evokit/cartpole.h>
#include <evokit/env.h>
#include <evokit/rollout.h>

#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pybind11.h"

namespace evokit::bindings {

namespace {

// An Episode with its env (its spec checks the arguments).
struct EpisodeHandle {
  std::shared_ptr<Env> env;
  std::unique_ptr<Episode> episode;
  std::vector<double> obs;  // the observation, before it is returned in the env's dtype
};

py::object default_value(const EnvArgumentValue& value) {
  return std::visit(
      [](const auto& v) -> py::object {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::pair<double, double>>) {
          return py::make_tuple(v.first, v.second);
        } else {
          return py::cast(v);
        }
      },
      value);
}

// The observation as gymnasium returns it: float32 or float64.
py::array observation(const EpisodeHandle& h) {
  const auto n = static_cast<py::ssize_t>(h.obs.size());
  if (h.env->spec().obs_float32) {
    py::array_t<float> out(n);
    float* dst = out.mutable_data();
    for (py::ssize_t i = 0; i < n; ++i) dst[i] = static_cast<float>(h.obs[static_cast<std::size_t>(i)]);
    return std::move(out);
  }
  py::array_t<double> out(n);
  std::copy(h.obs.begin(), h.obs.end(), out.mutable_data());
  return std::move(out);
}

std::uint64_t seed_value(std::int64_t seed, const std::string& where) {
  if (seed < 0) throw std::invalid_argument(where + "seed must be >= 0, got " + std::to_string(seed));
  return static_cast<std::uint64_t>(seed);
}

// A (rows, width) float64 input; ValueError naming `what` otherwise.
const double* rows_of(const DoubleIn& a, std::size_t rows, std::size_t width, const char* what) {
  if (a.ndim() != 2 || static_cast<std::size_t>(a.shape(0)) != rows ||
      static_cast<std::size_t>(a.shape(1)) != width) {
    const std::string shape = py::str(a.attr("shape"));
    throw std::invalid_argument(std::string(what) + " must have shape (" + std::to_string(rows) +
                                ", " + std::to_string(width) + "), one row per episode, got " +
                                shape);
  }
  return a.data();
}

py::array_t<double> cartpole_array(const CartPoleState& s) {
  py::array_t<double> out(4);
  double* d = out.mutable_data();
  d[0] = s.x, d[1] = s.x_dot, d[2] = s.theta, d[3] = s.theta_dot;
  return out;
}

}  // namespace

py::dict env_spec_dict(const EnvSpec& spec) {
  py::dict defaults;
  for (const EnvArgument& a : spec.defaults) defaults[py::str(a.name)] = default_value(a.value);
  return py::dict(py::arg("name") = spec.name, py::arg("entry_point") = spec.entry_point,
                  py::arg("defaults") = defaults, py::arg("obs_size") = spec.obs_size,
                  py::arg("action_size") = spec.action_size, py::arg("discrete") = spec.discrete,
                  py::arg("obs_float32") = spec.obs_float32,
                  py::arg("state_size") = spec.state_size,
                  py::arg("seeded_reset") = spec.seeded_reset);
}

void bind_envs(py::module_& m) {
  m.def(
      "native_envs",
      [] {
        py::list out;
        for (const EnvSpec* spec : env_specs()) out.append(env_spec_dict(*spec));
        return out;
      },
      "The core's native environments (CartPole, Pendulum, ...): one dict each with name, "
      "entry_point (gymnasium's), defaults (the constructor arguments native implements), "
      "obs_size, action_size (discrete: the number of actions), discrete, obs_float32, "
      "state_size and seeded_reset. The MuJoCo tasks are in mujoco_tasks().");

  py::class_<EpisodeHandle>(m, "NativeEpisode",
                            "One simulation of a NativeEnv, stepped by hand: reset(seed) or "
                            "reset_state(state), then step(action).")
      .def(
          "reset",
          [](EpisodeHandle& h, std::int64_t seed) {
            h.episode->reset_seed(seed_value(seed, ""), h.obs.data());
            return observation(h);
          },
          py::arg("seed"), "env.reset(seed=seed): returns the observation.")
      .def(
          "reset_state",
          [](EpisodeHandle& h, const DoubleIn& state) {
            require_length(state, static_cast<py::ssize_t>(h.env->spec().state_size), "state");
            h.episode->reset_state(state.data(), h.obs.data());
            return observation(h);
          },
          py::arg("state"), "Start from `state` (state_size float64 values); returns the observation.")
      .def(
          "step",
          [](EpisodeHandle& h, const py::object& action) {
            const EnvSpec& spec = h.env->spec();
            FloatIn values;
            float index[1];
            const float* a = nullptr;
            if (spec.discrete) {
              const auto i = action.cast<std::int64_t>();
              if (i < 0 || static_cast<std::size_t>(i) >= spec.action_size) {
                throw std::invalid_argument(spec.name + " action must be in [0, " +
                                            std::to_string(spec.action_size) + "), got " +
                                            std::to_string(i));
              }
              index[0] = static_cast<float>(i);
              a = index;
            } else {
              values = FloatIn::ensure(action);
              if (!values) throw std::invalid_argument(spec.name + " action must be a float array");
              require_length(values, static_cast<py::ssize_t>(spec.action_size), "action");
              a = values.data();
            }
            bool terminated = false;
            const double reward = h.episode->step(a, h.obs.data(), terminated);
            return py::make_tuple(observation(h), reward, terminated);
          },
          py::arg("action"),
          "One env step (a discrete env takes the action's index, a continuous one a float32 "
          "array): (observation, reward, terminated), the values gymnasium's env.step returns.");

  py::class_<Env, std::shared_ptr<Env>>(
      m, "NativeEnv", "An environment run natively: one of native_envs(), or a MujocoEnv.")
      .def(py::init([](const std::string& name) { return std::const_pointer_cast<Env>(make_env(name)); }),
           py::arg("name"), "The core's environment `name`; ValueError naming the known ones otherwise.")
      .def_property_readonly("name", [](const Env& env) { return env.spec().name; })
      .def_property_readonly("spec", [](const Env& env) { return env_spec_dict(env.spec()); })
      .def_property_readonly("obs_size", [](const Env& env) { return env.spec().obs_size; })
      .def_property_readonly("action_size", [](const Env& env) { return env.spec().action_size; })
      .def_property_readonly("state_size", [](const Env& env) { return env.spec().state_size; })
      .def(
          "episode",
          [](const std::shared_ptr<Env>& env) {
            return EpisodeHandle{env, env->episode(), std::vector<double>(env->spec().obs_size)};
          },
          "A simulation of its own, for stepping by hand.");

  m.def(
      "env_rollouts",
      [](const Env& env, const PolicyGraph& g, const Population& population,
         const Int64In& members, int max_steps, int num_threads, const py::object& seeds,
         const py::object& states, const py::object& obs_mean, const py::object& obs_std,
         float obs_clip, bool timing) {
        const EnvSpec& spec = env.spec();
        const std::vector<std::size_t> m_idx = episode_members(members);
        const std::size_t n = m_idx.size();
        if (seeds.is_none() == states.is_none()) {
          throw std::invalid_argument(spec.name + ": give seeds or states, exactly one");
        }
        std::vector<std::uint64_t> seed_values;
        DoubleIn state_rows;
        EpisodeStarts starts;
        if (!seeds.is_none()) {
          const auto s = Int64In::ensure(seeds);
          if (!s) throw std::invalid_argument("seeds must be an integer array");
          require_length(s, static_cast<py::ssize_t>(n), "seeds");
          for (std::size_t e = 0; e < n; ++e) {
            seed_values.push_back(seed_value(s.data()[e], "episode " + std::to_string(e) + ": "));
          }
          starts.seeds = seed_values.data();
        } else {
          state_rows = DoubleIn::ensure(states);
          if (!state_rows) throw std::invalid_argument("states must be a float array");
          starts.states = rows_of(state_rows, n, spec.state_size, "states");
        }
        if (obs_mean.is_none() != obs_std.is_none()) {
          throw std::invalid_argument("obs_mean and obs_std must be given together");
        }
        const auto obs = static_cast<py::ssize_t>(spec.obs_size);
        FloatIn mean, std;
        ObsNormalizer norm;
        const bool normalise = !obs_mean.is_none();
        if (normalise) {
          mean = FloatIn::ensure(obs_mean);
          std = FloatIn::ensure(obs_std);
          if (!mean || !std) throw std::invalid_argument("obs_mean and obs_std must be float arrays");
          require_length(mean, obs, "obs_mean");
          require_length(std, obs, "obs_std");
          if (!(obs_clip > 0)) {
            throw std::invalid_argument("obs_clip must be > 0, got " + std::to_string(obs_clip));
          }
          norm = ObsNormalizer{mean.data(), std.data(), obs_clip};
        }
        const auto rows = static_cast<py::ssize_t>(n);
        py::array_t<double> returns(rows);
        py::array_t<std::int64_t> lengths(rows);
        py::object sum = py::none(), sumsq = py::none();
        RolloutOutputs out{returns.mutable_data(), lengths.mutable_data(), nullptr, nullptr};
        if (normalise) {
          py::array_t<double> s({rows, obs}), q({rows, obs});
          out.obs_sum = s.mutable_data();
          out.obs_sumsq = q.mutable_data();
          sum = s;
          sumsq = q;
        }
        RolloutTiming times;
        if (timing) out.timing = &times;
        {
          py::gil_scoped_release release;
          env_rollouts(env, g, population, m_idx.data(), starts, n, max_steps,
                       normalise ? &norm : nullptr, out, num_threads);
        }
        if (!timing) return py::tuple(py::make_tuple(returns, lengths, sum, sumsq));
        return py::tuple(py::make_tuple(returns, lengths, sum, sumsq, py::make_tuple(times.wall_seconds, times.busy_seconds)));
      },
      py::arg("env"), py::arg("graph"), py::arg("population"), py::arg("members"),
      py::arg("max_steps"), py::arg("num_threads") = 1, py::kw_only(),
      py::arg("seeds") = py::none(), py::arg("states") = py::none(),
      py::arg("obs_mean") = py::none(), py::arg("obs_std") = py::none(),
      py::arg("obs_clip") = std::numeric_limits<float>::infinity(), py::arg("timing") = false,
      "Episode e of env with member members[e]'s policy (a continuous env takes its output as "
      "the action, a discrete one its argmax) from reset(seeds[e]) or reset_state(states[e]) "
      "(one row of state_size values per episode), until terminated or max_steps steps. "
      "Returns (returns float64, lengths int64, obs_sum, obs_sumsq): with obs_mean and obs_std "
      "the policy sees clip((obs - mean) / std, -obs_clip, obs_clip) in float32, and obs_sum / "
      "obs_sumsq (episodes x obs_size, float64) are the sums of the raw float32 observations "
      "and of their squares, else None. Threaded over episodes, the same for any num_threads. With "
      "timing=True a fifth item: (wall seconds, [busy seconds of each thread]), where the threads' "
      "time went (the idle share is 1 - sum(busy) / (threads * wall)).");

  m.def(
      "cartpole_reset",
      [](std::int64_t seed) { return cartpole_array(cartpole_reset(seed_value(seed, ""))); },
      py::arg("seed"),
      "The float64 state gymnasium's CartPoleEnv.reset(seed=seed) starts from "
      "(x, x_dot, theta, theta_dot).");
  m.def(
      "cartpole_step",
      [](const DoubleIn& state, int action) {
        require_length(state, 4, "state");
        CartPoleState s{state.data()[0], state.data()[1], state.data()[2], state.data()[3]};
        const bool terminated = cartpole_step(s, action);
        return py::make_tuple(cartpole_array(s), terminated);
      },
      py::arg("state"), py::arg("action"),
      "One CartPoleEnv step from `state`: (the next float64 state, terminated).");
}

}  // namespace evokit::bindings
