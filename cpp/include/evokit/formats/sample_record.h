// A sampling log's record payload, SampleRecord of proto/evokit.proto,
// written by the core: what the online sampler appends in chunks, the
// bytes protobuf's deterministic serialisation gives for the same fields
// (every field present, in field-number order; SamplingInfo's key as
// unpacked int64s, model_iter_id and mirrored present), so readers cannot
// tell the writers apart (tests/online/test_samplelog.py compares them on
// generated records).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "evokit/solver.h"  // SamplingInfo

namespace evokit::formats {

// The fields every record of a sampler's chunk shares.
struct SampleRecordChunk {
  std::string config_fingerprint;
  std::string model_fingerprint;
  std::uint64_t sampler_id = 0;
  double time = 0;
  std::uint64_t first_index = 0;  // sample_index of the first record
};

// Appends to `out` the framed records (record_log.h) of infos[i] with
// rewards[i], env_steps[i] and sample_index first_index + i.
void append_sample_records(std::string& out, const SampleRecordChunk& chunk, const std::vector<SamplingInfo>& infos,
                           const double* rewards, const std::int64_t* env_steps);

}  // namespace evokit::formats
