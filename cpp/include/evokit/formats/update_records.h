// Which logged samples an update of a model warehouse takes, and which it
// drops and why: the one place of that rule (`evokit update`,
// evokit/online/pipeline.py, calls it through the binding). The logs are
// read in pieces by a thread each (up to num_threads at once) and their
// records decoded on num_threads threads, then taken or dropped log by log
// in the order given on the calling thread (so the result never depends on
// the threads); of each record taken only its SamplingInfo and reward are
// kept (40 bytes), and the
// bookkeeping of what was taken grows with the runs of sample numbers, not
// with the records, so ten million records fit in well under a gigabyte.
//
// A record is dropped, the first rule that applies naming why:
//   its config fingerprint is not the warehouse's;
//   its iteration is after the warehouse's or negative;
//   it was drawn at an older iteration and the solver cannot correct it;
//   its iteration is no longer kept (async_es.max_to_keep);
//   its model fingerprint is not that iteration's;
//   an earlier update consumed it (consumed.pb);
//   a record of the same identity came first in these logs (the same
//     payload: appended twice; another payload: a conflicting claim);
//   its reward is not finite, or beyond float32;
//   the solver cannot rebuild its key (UpdateRule::rebuildable).
// A record's identity is (sampler_id, model_iter_id, sample_index) when it
// is numbered, else its record id (the first 16 bytes of the payload's
// sha256). Logs are taken in the order given, records in file order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "evokit/solver.h"  // SamplingInfo

namespace evokit::formats {

// What the update reads of a SampleRecord payload (proto/evokit.proto).
struct DecodedRecord {
  SamplingInfo info;
  double reward = 0;
  std::string_view config_fingerprint;  // views into the payload
  std::string_view model_fingerprint;
  std::uint64_t sampler_id = 0;
  std::optional<std::uint64_t> sample_index;
};

// Decodes `payload` as protobuf parses a SampleRecord (the last scalar
// wins, repeated keys packed or not and messages merged, unknown fields and
// groups skipped, a known field of another wire type kept as unknown).
// Returns "" or why the payload is not a SampleRecord.
std::string decode_sample_record(std::string_view payload, DecodedRecord& out);

// (sampler_id, model_iter_id): the samples of one sampler at one iteration.
using SampleGroup = std::pair<std::uint64_t, std::int64_t>;
// Sorted, disjoint runs [first, end) of sample numbers.
using SampleRuns = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

// Identities, as consumed.pb keeps them.
struct ConsumedRecords {
  std::unordered_set<std::string> record_ids;  // unnumbered records: 16 bytes each
  std::map<SampleGroup, SampleRuns> runs;

  bool contains(const SampleGroup& group, std::uint64_t index) const;
};

struct UpdateRule {
  std::string config_fingerprint;  // the warehouse's
  std::int64_t iteration = 0;      // the warehouse's latest, k
  std::set<std::int64_t> window;   // the iterations kept
  int max_to_keep = 0;
  bool corrects_older_samples = false;
  std::string sampling_type;  // for the reason of a sample of an older iteration
  // A kept iteration's model fingerprint, asked once for each iteration a
  // record names (an exception it throws ends the selection).
  std::function<std::string(std::int64_t iteration)> model_fingerprint;
  ConsumedRecords consumed;  // what the kept iterations' updates took
  // Whether the solver can rebuild a key: Solver::check_member does not
  // throw std::invalid_argument or std::out_of_range for it.
  std::function<bool(const SamplingInfo& info)> rebuildable;
  int num_threads = 1;
  std::size_t chunk_bytes = std::size_t{16} << 20;  // read per step, beyond a record's largest size
};

struct SkippedStretch {
  std::string path;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::string reason;
};

struct SelectedRecords {
  std::vector<SamplingInfo> infos;  // the samples taken, in log order
  std::vector<double> rewards;
  ConsumedRecords taken;            // their identities
  std::map<std::string, std::uint64_t> dropped;  // reason -> records
  std::vector<SkippedStretch> skipped;
  std::vector<std::string> log_errors;  // a log that could not be read: one line each
  std::uint64_t records_read = 0;
};

// The records of `paths` an update under `rule` takes.
SelectedRecords select_update_records(const std::vector<std::string>& paths, const UpdateRule& rule);

}  // namespace evokit::formats
