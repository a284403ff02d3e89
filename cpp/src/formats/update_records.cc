// See evokit/formats/update_records.h.
#include "evokit/formats/update_records.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "common/parallel.h"
#include "evokit/formats/log_file.h"
#include "evokit/formats/sha256.h"
#include "evokit/record_log.h"

namespace evokit::formats {

namespace {

// ---- protobuf's wire format, as protobuf parses a SampleRecord ----------------

constexpr int kMaxGroupDepth = 100;  // protobuf's default recursion limit

bool read_varint(std::string_view s, std::size_t& pos, std::uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (pos >= s.size()) return false;
    const auto b = static_cast<unsigned char>(s[pos++]);
    if (shift < 64) v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;  // more than 10 bytes
}

std::string at(const char* what, std::size_t pos) { return std::string(what) + " at byte " + std::to_string(pos); }

// Reads a field's tag: "" or why not.
std::string read_tag(std::string_view s, std::size_t& pos, std::uint32_t& number, int& wire) {
  const std::size_t start = pos;
  std::uint64_t tag = 0;
  if (!read_varint(s, pos, tag)) return at("truncated or overlong tag", start);
  if (tag > 0xFFFFFFFFu || (tag >> 3) == 0) return at("invalid field number", start);
  number = static_cast<std::uint32_t>(tag >> 3);
  wire = static_cast<int>(tag & 7);
  return "";
}

// Skips the value of a field of wire type `wire` (an unknown field, or a
// known one of another type, which protobuf keeps as unknown).
std::string skip_value(std::string_view s, std::size_t& pos, std::uint32_t number, int wire, int depth) {
  const std::size_t start = pos;
  std::uint64_t v = 0;
  switch (wire) {
    case 0:
      if (!read_varint(s, pos, v)) return at("truncated varint", start);
      return "";
    case 1:
    case 5: {
      const std::size_t width = wire == 1 ? 8 : 4;
      if (s.size() - pos < width) return at("truncated fixed-width value", start);
      pos += width;
      return "";
    }
    case 2:
      if (!read_varint(s, pos, v)) return at("truncated length", start);
      if (v > s.size() - pos) return at("length beyond the payload", start);
      pos += static_cast<std::size_t>(v);
      return "";
    case 3: {
      if (depth >= kMaxGroupDepth) return at("groups nested too deeply", start);
      for (;;) {
        std::uint32_t n = 0;
        int w = 0;
        if (pos >= s.size()) return at("unterminated group", start);
        std::string error = read_tag(s, pos, n, w);
        if (!error.empty()) return error;
        if (w == 4) {
          if (n != number) return at("end of another group", pos);
          return "";
        }
        error = skip_value(s, pos, n, w, depth + 1);
        if (!error.empty()) return error;
      }
    }
    case 4:
      return at("end of a group that was not started", start);
    default:
      return at("invalid wire type", start);
  }
}

// Reads the fields of the message `s` in order: field(number, wire, pos)
// reads one it knows (advancing pos) and returns "" or why not, or nullopt
// for one protobuf keeps as unknown, which is skipped here.
template <class Field>
std::string read_fields(std::string_view s, int depth, const Field& field) {
  std::size_t pos = 0;
  while (pos < s.size()) {
    std::uint32_t number = 0;
    int wire = 0;
    std::string error = read_tag(s, pos, number, wire);
    if (!error.empty()) return error;
    std::optional<std::string> known = field(number, wire, pos);
    if (!known) known = skip_value(s, pos, number, wire, depth);
    if (!known->empty()) return *known;
  }
  return "";
}

std::string decode_info(std::string_view s, SamplingInfo& info) {
  return read_fields(s, 1, [&](std::uint32_t number, int wire, std::size_t& pos) -> std::optional<std::string> {
    std::uint64_t v = 0;
    const std::size_t start = pos;
    if (number == 1 && wire == 2) {  // key, packed
      if (!read_varint(s, pos, v) || v > s.size() - pos) return at("truncated packed keys", start);
      const std::string_view packed = s.substr(pos, static_cast<std::size_t>(v));
      pos += static_cast<std::size_t>(v);
      std::size_t p = 0;
      while (p < packed.size()) {
        if (!read_varint(packed, p, v)) return at("truncated packed keys", start);
        info.key.push_back(static_cast<std::int64_t>(v));
      }
      return "";
    }
    if (wire != 0 || number < 1 || number > 3) return std::nullopt;
    if (!read_varint(s, pos, v)) return at("truncated varint", start);
    if (number == 1) info.key.push_back(static_cast<std::int64_t>(v));  // key, unpacked
    if (number == 2) info.model_iter_id = static_cast<std::int64_t>(v);
    if (number == 3) info.mirrored = v != 0;
    return "";
  });
}

double double_at(std::string_view s, std::size_t pos) {
  std::uint64_t bits = 0;
  for (int i = 0; i < 8; ++i) bits |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[pos + i])) << (8 * i);
  double d = 0;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

// FNV-1a: tells a record appended twice from another record of the same
// identity (used within one update only, never stored).
std::uint64_t payload_hash(std::string_view payload) {
  std::uint64_t h = 1469598103934665603ull;
  for (const char c : payload) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

std::string record_id(std::string_view payload) {
  Sha256 sha;
  sha.update(payload);
  const auto digest = sha.digest();
  return std::string(reinterpret_cast<const char*>(digest.data()), 16);
}

// What the threads make of one record of a piece.
struct Slot {
  DecodedRecord record;
  std::string error;  // not a SampleRecord: why
  std::uint64_t hash = 0;
  std::string id;  // unnumbered records only
};

// The records taken so far of one (sampler, iteration): runs of sample
// numbers, each with where its first record sits among those taken.
struct SeenRun {
  std::uint64_t end = 0;
  std::size_t first_taken = 0;
};
using SeenRuns = std::map<std::uint64_t, SeenRun>;  // first -> run

// The run holding `index`, or null.
const std::pair<const std::uint64_t, SeenRun>* run_holding(const SeenRuns& runs, std::uint64_t index) {
  auto it = runs.upper_bound(index);
  if (it == runs.begin()) return nullptr;
  --it;
  return index < it->second.end ? &*it : nullptr;
}

class Selector {
 public:
  Selector(const UpdateRule& rule, SelectedRecords& out) : rule_(rule), out_(out) {
    const std::int64_t k = rule.iteration;
    future_ = "from a future or unknown iteration (the warehouse is at " + std::to_string(k) + ")";
    older_ = rule.sampling_type +
             " sample drawn at an older iteration (a sample is rebuilt only from the distribution/population it "
             "was drawn from)";
    not_kept_ = "from an iteration no longer kept (max_to_keep = " + std::to_string(rule.max_to_keep) + ")";
  }

  void reserve(std::size_t records) {
    out_.infos.reserve(records);
    out_.rewards.reserve(records);
    hashes_.reserve(records);
  }

  void piece(const std::string& path, std::string_view data, std::uint64_t base, const std::vector<RecordSpan>& spans) {
    std::vector<const RecordSpan*> records;
    for (const RecordSpan& span : spans) {
      if (span.kind == RecordSpan::Kind::kRecord) {
        records.push_back(&span);
      }
    }
    // Decoded on the threads a batch at a time (the slots stay small), then
    // taken or dropped in file order on this one.
    constexpr std::size_t kBatch = std::size_t{1} << 16, kBlock = 2048;
    std::size_t next = 0;  // the next span to report
    for (std::size_t first = 0; first < records.size() || next < spans.size(); first += kBatch) {
      const std::size_t count = first < records.size() ? std::min(kBatch, records.size() - first) : 0;
      slots_.resize(count);
      const std::size_t blocks = detail::ceil_div(count, kBlock);
      detail::parallel_items(blocks, detail::team_size(blocks, rule_.num_threads), [&](std::size_t b) {
        for (std::size_t i = b * kBlock; i < std::min(count, (b + 1) * kBlock); ++i) {
          const RecordSpan& span = *records[first + i];
          const std::string_view payload =
              data.substr(static_cast<std::size_t>(span.offset - base) + kRecordHeaderSize,
                          static_cast<std::size_t>(span.length) - kRecordHeaderSize);
          Slot& slot = slots_[i];
          slot.record = DecodedRecord{};
          slot.error = decode_sample_record(payload, slot.record);
          slot.hash = payload_hash(payload);
          slot.id.clear();
          if (slot.error.empty() && !slot.record.sample_index) slot.id = record_id(payload);
        }
      });
      // The spans in file order up to this batch's last record (after the
      // last batch: to the piece's end).
      std::size_t slot = 0;
      for (; next < spans.size(); ++next) {
        const RecordSpan& span = spans[next];
        if (span.kind == RecordSpan::Kind::kSkipped) {
          out_.skipped.push_back({path, span.offset, span.length, span.reason});
          continue;
        }
        if (slot == count) break;  // the next batch's
        Slot& s = slots_[slot++];
        if (!s.error.empty()) {
          out_.skipped.push_back({path, span.offset, span.length, "payload is not a SampleRecord: " + s.error});
        } else {
          ++out_.records_read;
          take_or_drop(s);
        }
      }
      if (count == 0) break;
    }
  }

 private:
  void drop(const std::string& reason) { ++out_.dropped[reason]; }

  void take_or_drop(Slot& slot) {
    const DecodedRecord& r = slot.record;
    const std::int64_t it = r.info.model_iter_id;
    const std::int64_t k = rule_.iteration;
    if (r.config_fingerprint != rule_.config_fingerprint) {
      return drop("from another config or model (config fingerprint differs)");
    }
    if (it > k || it < 0) return drop(future_);
    if (it != k && !rule_.corrects_older_samples) return drop(older_);
    if (rule_.window.count(it) == 0) return drop(not_kept_);
    auto fp = fingerprints_.find(it);
    if (fp == fingerprints_.end()) fp = fingerprints_.emplace(it, rule_.model_fingerprint(it)).first;
    if (r.model_fingerprint != fp->second) {
      return drop("from another run (model fingerprint differs from the warehouse's)");
    }
    const SampleGroup group{r.sampler_id, it};
    const bool numbered = r.sample_index.has_value();
    const std::uint64_t index = numbered ? *r.sample_index : 0;
    if (numbered ? rule_.consumed.contains(group, index) : rule_.consumed.record_ids.count(slot.id) != 0) {
      return drop("already applied by an earlier update");
    }
    SeenRuns* runs = nullptr;
    if (numbered) {
      runs = &seen_[group];
      if (const auto* run = run_holding(*runs, index)) {
        const std::size_t first = run->second.first_taken + static_cast<std::size_t>(index - run->first);
        return drop(hashes_[first] == slot.hash
                        ? "duplicate of another record in these logs"
                        : "another record with the same sampler, iteration and sample_index came first");
      }
    } else if (seen_ids_.count(slot.id) != 0) {
      return drop("duplicate of another record in these logs");
    }
    if (!std::isfinite(r.reward)) return drop("reward is not finite");
    if (std::fabs(r.reward) > static_cast<double>(FLT_MAX)) {
      return drop("reward beyond the float32 range (|reward| > 3.4e38)");
    }
    if (!rule_.rebuildable(r.info)) return drop("invalid key");
    const std::size_t taken = out_.infos.size();
    if (numbered) {
      note_taken(*runs, index, taken);
    } else {
      seen_ids_.insert(slot.id);
      out_.taken.record_ids.insert(std::move(slot.id));
    }
    out_.infos.push_back(std::move(slot.record.info));
    out_.rewards.push_back(r.reward);
    hashes_.push_back(slot.hash);
  }

  // Extends the run ending at `index` when its records were taken in a row
  // up to this one (a sampler's log: always), else starts a run.
  static void note_taken(SeenRuns& runs, std::uint64_t index, std::size_t taken) {
    auto after = runs.upper_bound(index);
    if (after != runs.begin()) {
      auto before = std::prev(after);
      SeenRun& run = before->second;
      if (run.end == index && run.first_taken + static_cast<std::size_t>(index - before->first) == taken) {
        run.end = index + 1;
        return;
      }
    }
    runs.emplace_hint(after, index, SeenRun{index + 1, taken});
  }

 public:
  // The identities taken, as runs merged where they touch.
  void finish() {
    for (auto& [group, runs] : seen_) {
      SampleRuns merged;
      for (const auto& [first, run] : runs) {
        if (!merged.empty() && merged.back().second == first) {
          merged.back().second = run.end;
        } else {
          merged.emplace_back(first, run.end);
        }
      }
      if (!merged.empty()) out_.taken.runs[group] = std::move(merged);
    }
  }

 private:
  const UpdateRule& rule_;
  SelectedRecords& out_;
  std::string future_, older_, not_kept_;
  std::vector<Slot> slots_;
  std::vector<std::uint64_t> hashes_;  // of each record taken
  std::map<SampleGroup, SeenRuns> seen_;
  std::unordered_set<std::string> seen_ids_;
  std::map<std::int64_t, std::string> fingerprints_;  // of the iterations records named
};

}  // namespace

std::string decode_sample_record(std::string_view s, DecodedRecord& out) {
  return read_fields(s, 0, [&](std::uint32_t number, int wire, std::size_t& pos) -> std::optional<std::string> {
    const std::size_t start = pos;
    std::uint64_t v = 0;
    if (wire == 2 && (number == 1 || number == 3 || number == 4)) {
      if (!read_varint(s, pos, v)) return at("truncated length", start);
      if (v > s.size() - pos) return at("length beyond the payload", start);
      const std::string_view bytes = s.substr(pos, static_cast<std::size_t>(v));
      pos += static_cast<std::size_t>(v);
      if (number == 3) out.config_fingerprint = bytes;
      if (number == 4) out.model_fingerprint = bytes;
      if (number != 1) return "";
      const std::string error = decode_info(bytes, out.info);  // occurrences merge
      return error.empty() ? error : "info: " + error;
    }
    if (wire == 1 && (number == 2 || number == 7)) {
      if (s.size() - pos < 8) return at("truncated fixed-width value", start);
      if (number == 2) out.reward = double_at(s, pos);
      pos += 8;
      return "";
    }
    if (wire == 0 && (number == 5 || number == 6 || number == 8)) {
      if (!read_varint(s, pos, v)) return at("truncated varint", start);
      if (number == 5) out.sampler_id = v;
      if (number == 8) out.sample_index = v;
      return "";
    }
    return std::nullopt;
  });
}

bool ConsumedRecords::contains(const SampleGroup& group, std::uint64_t index) const {
  const auto it = runs.find(group);
  if (it == runs.end()) return false;
  const SampleRuns& r = it->second;
  auto after = std::upper_bound(r.begin(), r.end(), index,
                                [](std::uint64_t i, const std::pair<std::uint64_t, std::uint64_t>& run) {
                                  return i < run.first;
                                });
  if (after == r.begin()) return false;
  --after;
  return index < after->second;
}

namespace {

// A piece of a log (scan_log_file's), copied for the thread that takes it.
struct Piece {
  std::string data;
  std::uint64_t base = 0;
  std::vector<RecordSpan> spans;
};

struct Cancelled {};  // thrown inside a reader to stop its scan

// The pieces of one log, from the thread that reads it to the one that takes
// them in order: at most `capacity` waiting, so memory stays bounded.
class PieceQueue {
 public:
  explicit PieceQueue(std::size_t capacity) : capacity_(capacity) {}

  void push(Piece&& piece, const std::atomic<bool>& cancel) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return pieces_.size() < capacity_ || cancel; });
    if (cancel) throw Cancelled();
    pieces_.push_back(std::move(piece));
    changed_.notify_all();
  }
  // The log is read (error: why it could not be, "" when it was).
  void finish(std::string error, std::exception_ptr failure = nullptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    error_ = std::move(error);
    failure_ = std::move(failure);
    changed_.notify_all();
  }
  // The next piece; false once the log is read and every piece taken.
  bool pop(Piece& piece) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !pieces_.empty() || done_; });
    if (pieces_.empty()) return false;
    piece = std::move(pieces_.front());
    pieces_.pop_front();
    changed_.notify_all();
    return true;
  }
  void wake() {
    std::lock_guard<std::mutex> lock(mutex_);
    changed_.notify_all();
  }
  const std::string& error() const { return error_; }
  const std::exception_ptr& failure() const { return failure_; }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Piece> pieces_;
  std::size_t capacity_;
  bool done_ = false;
  std::string error_;
  std::exception_ptr failure_;
};

}  // namespace

SelectedRecords select_update_records(const std::vector<std::string>& paths, const UpdateRule& rule) {
  SelectedRecords out;
  Selector selector(rule, out);
  // Room for every record the logs can hold that could be taken (a record
  // taken carries the config fingerprint): reserved, not touched, so that
  // ten million samples are never copied into a grown vector.
  std::uint64_t bytes = 0;
  for (const std::string& path : paths) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec) bytes += size;
  }
  const std::size_t smallest = kRecordHeaderSize + (rule.config_fingerprint.empty() ? 0 : rule.config_fingerprint.size() + 2);
  selector.reserve(static_cast<std::size_t>(bytes / smallest));
  const std::size_t readers = std::min<std::size_t>(paths.size(), static_cast<std::size_t>(std::max(rule.num_threads, 1)));
  if (readers <= 1) {
    for (const std::string& path : paths) {
      try {
        scan_log_file(path, rule.chunk_bytes, [&](std::string_view data, std::uint64_t base, const std::vector<RecordSpan>& spans) {
          selector.piece(path, data, base, spans);
        });
      } catch (const std::invalid_argument& e) {  // the log could not be read: the others still count
        out.log_errors.emplace_back(e.what());
      }
    }
    selector.finish();
    return out;
  }
  // Several logs: `readers` threads read and scan them (log r, r + readers,
  // ...), two pieces ahead at most each, while this thread takes the pieces
  // log by log in the order given: the same records, drops and skips as one
  // log after another.
  std::vector<std::unique_ptr<PieceQueue>> queues;
  for (std::size_t i = 0; i < paths.size(); ++i) queues.push_back(std::make_unique<PieceQueue>(2));
  std::atomic<bool> cancel{false};
  std::vector<std::thread> threads;
  const auto stop_readers = [&] {
    cancel = true;
    for (auto& queue : queues) queue->wake();
    for (std::thread& t : threads) t.join();
  };
  try {
    for (std::size_t r = 0; r < readers; ++r) {
      threads.emplace_back([&, r] {
        for (std::size_t i = r; i < paths.size() && !cancel; i += readers) {
          PieceQueue& queue = *queues[i];
          try {
            scan_log_file(paths[i], rule.chunk_bytes, [&](std::string_view data, std::uint64_t base, const std::vector<RecordSpan>& spans) {
              queue.push(Piece{std::string(data), base, spans}, cancel);
            });
            queue.finish("");
          } catch (const Cancelled&) {
            queue.finish("");
          } catch (const std::invalid_argument& e) {
            queue.finish(e.what());
          } catch (...) {
            queue.finish("", std::current_exception());
          }
        }
      });
    }
    Piece piece;
    for (std::size_t i = 0; i < paths.size(); ++i) {
      while (queues[i]->pop(piece)) selector.piece(paths[i], piece.data, piece.base, piece.spans);
      if (queues[i]->failure()) std::rethrow_exception(queues[i]->failure());
      if (!queues[i]->error().empty()) out.log_errors.push_back(queues[i]->error());
    }
  } catch (...) {
    stop_readers();
    throw;
  }
  stop_readers();
  selector.finish();
  return out;
}

}  // namespace evokit::formats
