#include <evokit/episode_seeds.h>
#include <evokit/gaussian_sampler.h>
#include <evokit/noise.h>
#include <evokit/philox.h>

#include "pybind11.h"

namespace evokit::bindings {

namespace {

py::object table_view(const GaussianSampler& self, py::handle owner) {
  const auto& table = self.table();
  if (!table) return py::none();
  return readonly_view(table->data(), table->size(), owner);  // the shared table, no copy
}

}  // namespace

void bind_sampler(py::module_& m) {
  m.attr("TABLE_STREAM") = py::int_(kTableStream);
  m.attr("MAX_STREAM_KEY") = py::int_(kMaxStreamKey);

  m.def(
      "philox4x32",
      [](std::array<std::uint32_t, 4> counter, std::array<std::uint32_t, 2> key) {
        return philox4x32(counter, key);
      },
      py::arg("counter"), py::arg("key"), "Philox4x32-10 of one 128-bit counter.");
  m.attr("NOISE_ARS_ROUNDS") = py::int_(kNoiseArsRounds);
  m.attr("NOISE_VERSION") = py::int_(kNoiseVersion);
  m.def("noise_version_name", &noise_version_name, py::arg("version"),
        "What noise version `version` is (its generator, or which EvoKit wrote it), for "
        "messages that refuse files of another version.");
  m.def(
      "ars4x32",
      [](std::array<std::uint32_t, 4> counter, std::array<std::uint32_t, 4> key, int rounds) {
        if (rounds < 1 || rounds > 10) {
          throw std::invalid_argument("rounds must be in [1, 10], got " + std::to_string(rounds));
        }
        return ars4x32(counter, key, rounds);
      },
      py::arg("counter"), py::arg("key"), py::arg("rounds") = kNoiseArsRounds,
      "ARS4x32-`rounds` (Random123) of one 128-bit counter under a 128-bit key, as four "
      "32-bit words; the noise uses 7 rounds.");
  m.def("gaussian_at", &gaussian_at, py::arg("seed"), py::arg("stream"), py::arg("index"),
        "Standard normal number `index` of stream `stream` under `seed`.");
  m.def(
      "fill_gaussian",
      [](std::uint64_t seed, std::uint64_t stream, std::uint64_t start, py::ssize_t n) {
        if (n < 0) throw std::invalid_argument("n must be >= 0, got " + std::to_string(n));
        py::array_t<float> out(n);
        float* ptr = out.mutable_data();
        {
          py::gil_scoped_release release;
          fill_gaussian(seed, stream, start, ptr, static_cast<std::size_t>(n));
        }
        return out;
      },
      py::arg("seed"), py::arg("stream"), py::arg("start"), py::arg("n"),
      "gaussian_at(seed, stream, start + i) for i in range(n).");
  m.def(
      "sum_floats",
      [](const FloatIn& x, int num_threads) {
        if (x.ndim() != 1) throw std::invalid_argument("x must be a 1-D float32 array");
        const float* data = x.data();
        const auto n = static_cast<std::size_t>(x.shape(0));
        py::gil_scoped_release release;
        return sum_floats(data, n, num_threads);
      },
      py::arg("x"), py::arg("num_threads") = 1,
      "The sum of x (float32, 1-D) in double: a plain threaded read of x, the yardstick "
      "bench/kernels.py compares the noise kernels with.");
  m.def("hash_draw", &hash_draw, py::arg("seed"), py::arg("a"), py::arg("b"), py::arg("c"));
  m.def("episode_seed", &episode_seed, py::arg("seed"), py::arg("generation"), py::arg("index"),
        py::arg("tag"), py::arg("episode"),
        "The seed of episode `episode` of sample `index` of `generation` for `tag`'s use "
        "(evokit/episode_seeds.h).");
  m.def("episode_seed_table", [](std::uint64_t seed, std::uint64_t generation, const py::array_t<std::int64_t,
                                 py::array::c_style | py::array::forcecast>& indices, std::uint64_t tag,
                                 std::size_t episodes) {
    if (indices.ndim() != 1) throw std::invalid_argument("indices must be 1-D");
    for (py::ssize_t i = 0; i < indices.shape(0); ++i) {
      if (indices.at(i) < 0) throw std::invalid_argument("indices must be >= 0, got " + std::to_string(indices.at(i)));
    }
    py::array_t<std::int64_t> out({indices.shape(0), static_cast<py::ssize_t>(episodes)});
    const std::int64_t* in = indices.data();
    std::int64_t* o = out.mutable_data();
    const auto n = static_cast<std::size_t>(indices.shape(0));
    py::gil_scoped_release release;
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t e = 0; e < episodes; ++e) {
        o[i * episodes + e] = static_cast<std::int64_t>(
            episode_seed(seed, generation, static_cast<std::uint64_t>(in[i]), tag, e));
      }
    }
    return out;
  }, py::arg("seed"), py::arg("generation"), py::arg("indices"), py::arg("tag"), py::arg("episodes"),
        "episode_seed of episodes 0 .. episodes-1 of each sample in `indices`, as an (n, episodes) int64 array.");
  m.attr("SAMPLE_EPISODE_TAG") = kSampleEpisodeTag;
  m.attr("EVAL_EPISODE_TAG") = kEvalEpisodeTag;
  m.attr("SAMPLER_EPISODE_TAG") = kSamplerEpisodeTag;

  py::class_<GaussianSampler>(m, "GaussianSampler")
      .def(py::init([](std::uint64_t seed, float sigma, bool cached, std::int64_t cache_size,
                       std::int64_t num_params, int num_threads) {
             if (cache_size < 0) {
               throw std::invalid_argument("gaussian_sampling.cache_size must be >= 0, got " +
                                           std::to_string(cache_size));
             }
             if (num_params <= 0) {
               throw std::invalid_argument("num_params must be > 0, got " +
                                           std::to_string(num_params));
             }
             GaussianSamplerOptions options;
             options.seed = seed;
             options.sigma = sigma;
             options.cached = cached;
             options.cache_size = static_cast<std::size_t>(cache_size);
             options.num_params = static_cast<std::size_t>(num_params);
             options.num_threads = num_threads;
             py::gil_scoped_release release;  // building the table takes a while
             return std::make_unique<GaussianSampler>(options);
           }),
           py::arg("seed"), py::arg("sigma"), py::arg("cached"), py::arg("cache_size"),
           py::arg("num_params"), py::arg("num_threads") = 1)
      .def_property_readonly("seed", [](const GaussianSampler& s) { return s.options().seed; })
      .def_property_readonly("sigma", &GaussianSampler::sigma)
      .def_property_readonly("cached", &GaussianSampler::cached)
      .def_property_readonly("cache_size",
                             [](const GaussianSampler& s) { return s.options().cache_size; })
      .def_property_readonly("num_params", &GaussianSampler::num_params)
      .def_property_readonly("max_key", &GaussianSampler::max_key)
      .def_property_readonly(
          "table",
          [](py::object self) { return table_view(self.cast<const GaussianSampler&>(), self); },
          "Read-only view of the shared noise table (None when uncached).")
      .def("check_key", &GaussianSampler::check_key, py::arg("key"))
      .def("draw_key", &GaussianSampler::draw_key, py::arg("iteration"), py::arg("pair_id"),
           py::arg("counter"), py::arg("stream") = 0)
      .def(
          "noise",
          [](const GaussianSampler& self, std::int64_t key) {
            self.check_key(key);
            py::array_t<float> out(static_cast<py::ssize_t>(self.num_params()));
            float* ptr = out.mutable_data();
            py::gil_scoped_release release;
            self.noise(key, ptr);
            return out;
          },
          py::arg("key"), "The noise vector eps(key).")
      .def(
          "perturb",
          [](const GaussianSampler& self, const FloatIn& theta, std::int64_t key, float sign,
             const py::object& out, int num_threads) {
            const auto n = static_cast<py::ssize_t>(self.num_params());
            require_length(theta, n, "theta");
            py::array_t<float> result =
                out.is_none() ? py::array_t<float>(n) : require_out(out, n, "out");
            const float* src = theta.data();
            float* dst = result.mutable_data();
            {
              py::gil_scoped_release release;
              self.perturb(src, key, sign, dst, num_threads);
            }
            return result;
          },
          py::arg("theta"), py::arg("key"), py::arg("sign"), py::arg("out") = py::none(),
          py::arg("num_threads") = 1,
          "theta + sign * sigma * eps(key), written into `out` (a float32 array) if given.")
      .def(
          "descent_direction",
          [](const GaussianSampler& self, const Int64In& keys, const FloatIn& signs,
             const FloatIn& weights, const py::object& theta, float weight_decay,
             int num_threads) {
            const py::ssize_t count = keys.ndim() == 1 ? keys.shape(0) : -1;
            if (count < 0) throw std::invalid_argument("keys must be a 1-D array");
            require_length(signs, count, "signs");
            require_length(weights, count, "weights");
            const auto n = static_cast<py::ssize_t>(self.num_params());
            FloatIn theta_arr;
            const float* theta_ptr = nullptr;
            if (!theta.is_none()) {
              theta_arr = FloatIn::ensure(theta);
              if (!theta_arr) throw std::invalid_argument("theta must be a float32 array");
              require_length(theta_arr, n, "theta");
              theta_ptr = theta_arr.data();
            } else if (weight_decay != 0.0f) {
              throw std::invalid_argument("theta is required when weight_decay != 0");
            }
            py::array_t<float> out(n);
            float* dst = out.mutable_data();
            {
              py::gil_scoped_release release;
              self.descent_direction(keys.data(), signs.data(), weights.data(),
                                     static_cast<std::size_t>(count), theta_ptr, weight_decay, dst,
                                     num_threads);
            }
            return out;
          },
          py::arg("keys"), py::arg("signs"), py::arg("weights"), py::arg("theta") = py::none(),
          py::arg("weight_decay") = 0.0f, py::arg("num_threads") = 1,
          "-1/(n sigma) sum_i weights[i] signs[i] eps(keys[i]) + weight_decay * theta.");
}

}  // namespace evokit::bindings
