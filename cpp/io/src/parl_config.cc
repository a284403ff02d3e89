#include "parl_config.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <utility>
#include <vector>

#include "evokit/io/errors.h"
#include "text_walk.h"

namespace evokit::io::detail {

namespace {

constexpr const char* kEvoKit = "EvoKit's layout";
constexpr const char* kParl = "PARL EvoKit's flat layout";

// Top-level fields only one layout has (async_es is in both).
const char* layout_of(const std::string& top_level) {
  static const std::map<std::string, const char*> kTopLevel = {
      {"solver", kEvoKit},    {"train", kEvoKit},          {"seed", kParl},
      {"buffer_size", kParl}, {"gaussian_sampling", kParl}, {"optimizer", kParl}};
  const auto it = kTopLevel.find(top_level);
  return it == kTopLevel.end() ? nullptr : it->second;
}

// PARL field -> the EvoKitConfig field with its meaning (evokit/parl_config.py FIELDS).
const std::vector<std::pair<std::string, std::string>>& fields() {
  static const std::vector<std::pair<std::string, std::string>> kFields = {
      {"seed", "solver.sampling.gaussian_sampling.seed"},
      {"gaussian_sampling.std", "solver.sampling.gaussian_sampling.std"},
      {"gaussian_sampling.cached", "solver.sampling.gaussian_sampling.cached"},
      {"gaussian_sampling.cache_size", "solver.sampling.gaussian_sampling.cache_size"},
      {"optimizer.type", "solver.optimizer.type"},
      {"optimizer.base_lr", "solver.optimizer.base_lr"},
      {"optimizer.momentum", "solver.optimizer.momentum.momentum"},
      {"optimizer.beta1", "solver.optimizer.adam.beta1"},
      {"optimizer.beta2", "solver.optimizer.adam.beta2"},
      {"optimizer.epsilon", "solver.optimizer.adam.epsilon"},
      {"async_es.max_to_keep", "async_es.max_to_keep"},
  };
  return kFields;
}

}  // namespace

Layout detect_layout(const std::string& text, const std::string& source) {
  std::map<std::string, const FieldToken*> first;  // layout -> its first top-level field
  const std::vector<FieldToken> tokens = field_tokens(text);
  for (const FieldToken& t : tokens) {
    if (t.path.find('.') != std::string::npos) continue;
    const char* layout = layout_of(t.path);
    if (layout == nullptr || first.count(layout)) continue;
    if (!first.empty()) {
      const FieldToken& a = *first.begin()->second;
      throw ConfigError(source + ":" + std::to_string(t.line) + ":" + std::to_string(t.column) + ": " +
                        t.path + ": a field of " + layout + " in a config of " + first.begin()->first +
                        " ('" + a.path + "' at line " + std::to_string(a.line) +
                        "); write the config in one layout (docs/migrating_from_parl.md)");
    }
    first[layout] = &t;
  }
  return first.count(kParl) ? Layout::kParl : Layout::kEvoKit;
}

std::string parl_note(const std::string& source) {
  return source + ": read in " + kParl +
         " (seed, gaussian_sampling, optimizer, async_es at the top level) and mapped onto EvoKit's "
         "solver { ... } (docs/migrating_from_parl.md)";
}

std::optional<std::string> parl_field(const std::string& evokit_field) {
  for (const auto& [parl, evokit] : fields()) {
    if (evokit == evokit_field) return parl;
  }
  return std::nullopt;
}

proto::EvoKitConfig parl_to_evokit(const proto::ParlEvoKitConfig& parl, const std::string& text,
                                   const std::string& source) {
  const std::vector<FieldToken> tokens = field_tokens(text);
  const auto fail = [&](const std::string& field, const std::string& message) {
    const int line = field_line(tokens, field);
    throw ConfigError((line > 0 ? source + ":" + std::to_string(line) : source) + ": " + field + " " +
                      message);
  };
  // PARL fields with no EvoKit meaning (evokit/parl_config.py _REFUSED, in its order).
  if (parl.has_buffer_size()) fail("buffer_size", "has no EvoKit meaning (PARL EvoKit reads it nowhere)");
  const proto::ParlAsyncESConfig& async_es = parl.async_es();
  if (async_es.has_model_warehouse()) {
    fail("async_es.model_warehouse",
         "has no EvoKit meaning: the warehouse is the directory given to `evokit init-solver "
         "--warehouse` (io::Warehouse in C++)");
  }
  if (async_es.model_md5_size() > 0) {
    fail("async_es.model_md5", "has no EvoKit meaning: EvoKit checks models by the fingerprint in solver.pb");
  }
  if (async_es.has_model_iter_id() && async_es.model_iter_id() != 0) {
    fail("async_es.model_iter_id",
         "has no EvoKit meaning but 0: EvoKit's warehouse numbers its iterations itself "
         "(model_iter_id-k directories)");
  }
  if (parl.seed() < 0) {
    fail("seed", "must be >= 0 (EvoKit's seed is unsigned), got " + std::to_string(parl.seed()));
  }
  const proto::ParlOptimizerConfig& opt = parl.optimizer();
  std::string type = opt.type();
  std::transform(type.begin(), type.end(), type.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (type != "sgd" && type != "adam") {
    fail("optimizer.type", "must be \"SGD\" or \"Adam\" (in any case), got \"" + opt.type() + "\"");
  }

  // The table of fields() (a field left out of the file has PARL's default).
  proto::EvoKitConfig config;
  proto::SolverConfig& solver = *config.mutable_solver();
  proto::GaussianSamplingConfig& g = *solver.mutable_sampling()->mutable_gaussian_sampling();
  g.set_seed(static_cast<std::uint64_t>(parl.seed()));
  g.set_std(parl.gaussian_sampling().std());
  g.set_cached(parl.gaussian_sampling().cached());
  g.set_cache_size(parl.gaussian_sampling().cache_size());
  proto::OptimizerConfig& o = *solver.mutable_optimizer();
  // PARL's "SGD" is SGD with momentum (0.9 by default).
  o.set_type(type == "sgd" ? proto::OptimizerConfig::MOMENTUM : proto::OptimizerConfig::ADAM);
  o.set_base_lr(opt.base_lr());
  o.mutable_momentum()->set_momentum(opt.momentum());
  o.mutable_adam()->set_beta1(opt.beta1());
  o.mutable_adam()->set_beta2(opt.beta2());
  o.mutable_adam()->set_epsilon(opt.epsilon());
  config.mutable_async_es()->set_max_to_keep(async_es.max_to_keep());
  solver.mutable_sampling()->set_type(proto::SamplingConfig::GAUSSIAN_SAMPLING);
  solver.set_antithetic(false);  // PARL's clones draw independent noise
  return config;
}

}  // namespace evokit::io::detail
