// Everything in evokit::io (the C++ component for services that embed
// EvoKit: configs, ONNX models, solver files, sampling logs, warehouses).
#pragma once

#include "evokit/io/config.h"
#include "evokit/io/errors.h"
#include "evokit/io/es_agent.h"
#include "evokit/io/fingerprint.h"
#include "evokit/io/evokit.pb.h"
#include "evokit/io/onnx_model.h"
#include "evokit/io/sample_log.h"
#include "evokit/io/sha256.h"
#include "evokit/io/solver_state.h"
#include "evokit/io/state_file.h"
#include "evokit/io/warehouse.h"
