// Prints a CartPole-v1 trajectory from a given state under given actions, one
// line per step: "x x_dot theta theta_dot terminated" with the float32
// observation printed to 9 significant digits. round_trip.sh compares it with
// gymnasium's CartPoleEnv to check that the physics are the same.
//
//   evokit_cartpole_trace X X_DOT THETA THETA_DOT ACTIONS     (ACTIONS: e.g. 0110...)
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cartpole.h"
#include "cli.h"

int main(int argc, char** argv) {
  return evokit_demo::run_main(
      "evokit_cartpole_trace", "usage: evokit_cartpole_trace X X_DOT THETA THETA_DOT ACTIONS",
      [&] {
        if (argc != 6) throw evokit_demo::UsageError("expected 5 arguments");
        evokit_demo::CartPole::State state{};
        for (int i = 0; i < 4; ++i) state[static_cast<std::size_t>(i)] = std::stod(argv[i + 1]);
        evokit_demo::CartPole env(0);
        env.reset_to(state);
        for (const char c : std::string(argv[5])) {
          const evokit_demo::CartPole::Step s = env.step(c == '1' ? 1 : 0);
          std::printf("%.9g %.9g %.9g %.9g %d\n", static_cast<double>(s.obs[0]),
                      static_cast<double>(s.obs[1]), static_cast<double>(s.obs[2]),
                      static_cast<double>(s.obs[3]), s.terminated ? 1 : 0);
        }
        return 0;
      });
}
