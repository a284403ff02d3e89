// PARL EvoKit's flat config layout, mapped onto EvoKitConfig (internal): the
// same table and refusals as evokit/parl_config.py. The table is explained
// in docs/migrating_from_parl.md.
#pragma once

#include <optional>
#include <string>

#include "evokit/io/evokit.pb.h"

namespace evokit::io::detail {

enum class Layout { kEvoKit, kParl };

// kParl when the top-level fields of `text` are PARL EvoKit's (seed,
// buffer_size, gaussian_sampling, optimizer; async_es is in both). Throws
// ConfigError for a text with top-level fields of both layouts, naming the
// first field of the layout that comes second.
Layout detect_layout(const std::string& text, const std::string& source);

// The EvoKitConfig `parl` (parsed from `text`) means; ConfigError naming the
// field for a PARL field with no EvoKit meaning or a value it cannot map.
proto::EvoKitConfig parl_to_evokit(const proto::ParlEvoKitConfig& parl, const std::string& text,
                                   const std::string& source);

// The one-line note that `source` was read in PARL EvoKit's layout.
std::string parl_note(const std::string& source);

// The PARL field that the EvoKitConfig field `evokit_field` is mapped from.
std::optional<std::string> parl_field(const std::string& evokit_field);

}  // namespace evokit::io::detail
