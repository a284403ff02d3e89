// Whole episodes of a population's members, threaded over episodes (STL +
// OpenMP): the machinery the core's CartPole (cartpole.h) and the MuJoCo
// component (cpp/mujoco) share. An environment supplies the episode; this
// file supplies the checks, the threads and the member's forward pass.
//
// Determinism. An episode runs on one thread from start to end, with its
// member's parameters materialised once in that thread's buffer by the same
// float expression the kernels use for a ParamView (base + scale * noise,
// never contracted into FMA: the core is built with -ffp-contract=off), so
// the policy's outputs are the bits PolicyGraph::run gives on the vector
// GaussianSampler::perturb makes. OpenMP only decides which thread runs which
// episode: results are the same for any number of threads.
//
// Recurrent policies: an EpisodePolicy carries the graph's state from one
// act() to the next and load() zeroes it, so every episode starts from a
// zero state whichever episodes the thread ran before.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "evokit/policy_graph.h"
#include "evokit/population.h"

namespace evokit {

// One thread's forward pass of one member at a time: load() a member, then
// act() on each observation of its episode.
class EpisodePolicy {
 public:
  // The graph, a plan of it for one observation, and the population the
  // members come from; all must outlive this object.
  EpisodePolicy(const PolicyGraph& graph, const PolicyGraph::Plan& plan,
                const Population& population);

  // Makes member `member` (< population.size(), unchecked) the one act()
  // runs, from a zero recurrent state; a perturbed member's parameters are
  // materialised, unless it is already the loaded one.
  void load(std::size_t member);

  // The policy's output out[plan.output_size()] for one observation
  // obs[graph.obs_size()], the recurrent state carried to the next call.
  // Allocates nothing.
  void act(const float* obs, float* out) noexcept;

 private:
  const PolicyGraph* graph_;
  const PolicyGraph::Plan* plan_;
  const Population* population_;
  std::vector<float> params_;
  // The plan's workspace with a cache line of padding on either side: the
  // forward pass writes it at every step, and another thread's buffers may
  // sit next to it on the heap (false sharing).
  std::vector<float> workspace_;
  std::size_t loaded_;  // the member params_ holds (population size: none)
  ParamView view_;
  std::vector<float> state_;  // the recurrent state (empty if feed-forward)
};

// The checks every rollout function makes, and the graph's plan for one
// observation. Throws std::invalid_argument for num_threads < 1, a
// population whose members do not have graph.num_params() parameters,
// max_steps < 1, or null `members` when num_episodes > 0; std::out_of_range
// naming the episode for a member index outside the population.
PolicyGraph::Plan prepare_rollouts(const PolicyGraph& graph, const Population& population,
                                   const std::size_t* members, std::size_t num_episodes,
                                   int max_steps, int num_threads);

// Where the threads' time went in run_episodes: the wall time of the
// whole call and, per thread, the time spent inside episodes (loading the
// member's policy and running the episode). The idle share of the worker
// time is 1 - sum(busy_seconds) / (threads * wall_seconds): what dynamic
// scheduling could not fill (a long last episode, waking the threads).
struct RolloutTiming {
  double wall_seconds = 0;
  std::vector<double> busy_seconds;  // one per thread
};

// episode(e, policy, thread) for every e < num_episodes, on `threads` OpenMP
// threads (1 runs on the calling thread), episodes handed out one at a time
// (they differ in length). `policy` is the thread's EpisodePolicy with
// members[e] loaded; `thread` in [0, threads) names the calling thread, for
// per-thread state the caller made beforehand. The first exception an
// episode throws is rethrown once every thread has finished; the other
// episodes still run. `plan` comes from prepare_rollouts. With `timing`,
// the call's wall time and each thread's busy time (two clock reads per
// episode).
void run_episodes(const PolicyGraph& graph, const PolicyGraph::Plan& plan,
                  const Population& population, const std::size_t* members,
                  std::size_t num_episodes, int threads,
                  const std::function<void(std::size_t, EpisodePolicy&, int)>& episode,
                  RolloutTiming* timing = nullptr);

}  // namespace evokit
