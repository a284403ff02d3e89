// PARL EvoKit's CartPole demo (evo_kit/demo/paddle/cartpole_solver_parallel.cc)
// on EvoKit's C++ io API, loop for loop (docs/migrating_from_parl.md): PARL's
// own config file as it is, an ONNX model where PARL had a Paddle Lite one.
//
//   evokit_parl_cartpole CONFIG MODEL [EPOCHS]
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

#include "cartpole.h"
#include "evokit/io/io.h"

const int ITER = 10;

// The return of one CartPole episode; the action is the argmax of predict().
float evaluate(evokit_demo::CartPole& env, const evokit::io::ESAgent& agent) {
  const auto policy = [&agent](const std::vector<float>& obs) { return agent.predict(obs); };
  return static_cast<float>(evokit_demo::run_episode(env, policy).total_reward);
}

int main(int argc, char* argv[]) try {
  if (argc < 3) {
    std::fprintf(stderr, "usage: evokit_parl_cartpole CONFIG MODEL [EPOCHS]\n");
    return 2;
  }
  const int epochs = argc > 3 ? std::atoi(argv[3]) : 100;
  std::vector<evokit_demo::CartPole> envs;
  for (int i = 0; i < ITER; ++i) envs.emplace_back(i);  // seeded: runs repeat

  evokit::io::ESAgent agent;
  agent.load_config(argv[1]);           // PARL's cartpole_config.prototxt, unchanged
  agent.load_inference_model(argv[2]);  // model.onnx (`evokit init-model`)
  agent.init_solver();

  // Clone agents to sample (explore).
  std::vector<evokit::io::ESAgent> sampling_agents;
  for (int i = 0; i < ITER; ++i) sampling_agents.push_back(agent.clone());

  std::vector<evokit::proto::SamplingInfo> noisy_keys(ITER);
  std::vector<float> noisy_rewards(ITER, 0.0f);
  for (int epoch = 0; epoch < epochs; ++epoch) {
#pragma omp parallel for schedule(dynamic, 1)
    for (int i = 0; i < ITER; ++i) {
      sampling_agents[i].add_noise(&noisy_keys[i]);
      noisy_rewards[i] = evaluate(envs[i], sampling_agents[i]);
    }
    // NOTE: all parameters of sampling_agents will be updated
    agent.update(noisy_keys, noisy_rewards);
    std::printf("Epoch: %d Reward: %.0f\n", epoch, evaluate(envs[0], agent));
  }
  return 0;
} catch (const std::exception& e) {  // one line: the file, line and field of a bad config
  std::fprintf(stderr, "evokit_parl_cartpole: %s\n", e.what());
  return 1;
}
