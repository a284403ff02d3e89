// SHA-256 for the io library's users: the core's (evokit/formats/sha256.h).
#pragma once

#include "evokit/formats/sha256.h"

namespace evokit::io {

using formats::Sha256;
using formats::sha256_hex;

}  // namespace evokit::io
