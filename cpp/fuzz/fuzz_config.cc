// libFuzzer harness: configs (protobuf text format) through
// evokit::io::parse_config and validate_config, and, for a config they
// accept, the solver it describes on a model of 8 parameters, which draws
// one member.
#include <string>
#include <vector>

#include "evokit/io/config.h"
#include "evokit/solver.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = evokit::fuzz::as_string(data, size);
  evokit::fuzz::refused_or_read([&] {
    const evokit::proto::EvoKitConfig config =
        evokit::io::parse_config(text, "fuzz.prototxt");
    evokit::io::validate_config(config, "fuzz.prototxt", 8);
    evokit::io::config_to_text(config);
    // What a config asks for is the user's to give: a noise table of
    // cache_size floats, population_size members. The harness builds the
    // solver only within a budget (a legitimate 9-million-entry table takes
    // over -timeout under the sanitizers).
    const auto& sampling = config.solver().sampling();
    if (sampling.gaussian_sampling().cache_size() > (1 << 20) ||
        sampling.ars_sampling().cache_size() > (1 << 20) ||
        config.solver().population_size() > (1 << 12)) {
      return;
    }
    const auto solver =
        evokit::make_solver(evokit::io::solver_options(config.solver()), std::vector<float>(8), 1);
    solver->draw(0, 0);
  });
  return 0;
}
