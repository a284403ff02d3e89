#include "evokit/record_log.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <queue>
#include <stdexcept>
#include <utility>

#include "evokit/crc32.h"

namespace evokit {

namespace {

constexpr std::size_t kHeaderCrcSpan = 12;  // the header CRC covers bytes 0..11
constexpr std::string_view kMagic(kRecordMagic, 4);

void put_u32(char* out, std::uint32_t v) {
  for (int k = 0; k < 4; ++k) out[k] = static_cast<char>((v >> (8 * k)) & 0xFFu);
}

std::uint32_t get_u32(const char* at) {
  const auto* b = reinterpret_cast<const unsigned char*>(at);
  return static_cast<std::uint32_t>(b[0]) | (static_cast<std::uint32_t>(b[1]) << 8) |
         (static_cast<std::uint32_t>(b[2]) << 16) | (static_cast<std::uint32_t>(b[3]) << 24);
}

// A magic that may start a record: its header is whole and its header CRC
// holds, or it is too close to the end of the file for a whole header.
struct Candidate {
  std::size_t offset = 0;
  bool whole = false;         // the header is whole (and its CRC holds)
  std::uint32_t length = 0;   // whole: the payload length it claims
  bool payload_ok = false;    // whole, the payload fits in the file, and its CRC holds
};

// Every candidate in file order; a magic cannot overlap another, so each
// byte position is tested once as a magic start.
std::vector<Candidate> find_candidates(std::string_view data, std::uint64_t& examined) {
  std::vector<Candidate> out;
  std::size_t from = 0;
  for (;;) {
    const std::size_t pos = data.find(kMagic, from);
    const std::size_t searched_to = pos == std::string_view::npos ? data.size() : pos + 1;
    examined += searched_to - std::min(from, data.size());
    if (pos == std::string_view::npos) break;
    from = pos + 1;
    if (pos + kRecordHeaderSize > data.size()) {
      out.push_back(Candidate{pos, false, 0, false});
      continue;
    }
    examined += kHeaderCrcSpan;
    if (crc32(data.data() + pos, kHeaderCrcSpan) == get_u32(data.data() + pos + kHeaderCrcSpan)) {
      out.push_back(Candidate{pos, true, get_u32(data.data() + pos + 4), false});
    }
  }
  return out;
}

// Sets payload_ok of every whole candidate whose payload lies in the file,
// from one CRC pass over the data: the CRC of data[s, e) is crc(data[0, e))
// ^ crc32_combine(crc(data[0, s)), 0, e - s), with both prefix CRCs taken as
// the pass reaches s and e.
void check_payloads(std::string_view data, std::vector<Candidate>& candidates,
                    std::uint64_t& examined) {
  std::size_t done = 0;      // the pass has read data[0, done)
  std::uint32_t prefix = 0;  // crc32(data[0, done))
  const auto advance = [&](std::size_t to) {
    prefix = crc32(data.data() + done, to - done, prefix);
    examined += to - done;
    done = to;
  };
  struct Pending {
    std::size_t end;
    std::size_t index;
    std::uint32_t prefix_at_start;
    bool operator>(const Pending& o) const { return end > o.end; }
  };
  std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> pending;
  const auto resolve_until = [&](std::size_t limit) {
    while (!pending.empty() && pending.top().end <= limit) {
      const Pending p = pending.top();
      pending.pop();
      advance(p.end);
      Candidate& c = candidates[p.index];
      const std::uint32_t payload_crc = prefix ^ crc32_combine(p.prefix_at_start, 0, c.length);
      c.payload_ok = payload_crc == get_u32(data.data() + c.offset + 8);
    }
  };
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    if (!c.whole || c.length > kMaxRecordPayload ||
        c.length > data.size() - c.offset - kRecordHeaderSize) {
      continue;
    }
    const std::size_t start = c.offset + kRecordHeaderSize;
    resolve_until(start);
    advance(start);
    pending.push(Pending{start + c.length, i, prefix});
  }
  resolve_until(data.size());
}

// The state machine over the candidates: what a reader keeps and skips.
class Scanner {
 public:
  Scanner(std::string_view data, const std::vector<Candidate>& candidates)
      : data_(data), candidates_(candidates) {}

  std::vector<RecordSpan> run() {
    const std::size_t size = data_.size();
    std::size_t pos = 0;
    while (pos < size) {
      const std::size_t left = size - pos;
      std::string reason;
      const Candidate* c = candidate_at(pos);
      if (left < kRecordHeaderSize) {
        const std::size_t n = std::min<std::size_t>(left, 4);
        if (std::memcmp(data_.data() + pos, kRecordMagic, n) == 0) {
          skip(pos, left, "torn record at end of file (" + std::to_string(left) +
                              " of at least " + std::to_string(kRecordHeaderSize) + " bytes)");
          break;
        }
        reason = "not a record (no magic)";
      } else if (data_.compare(pos, 4, kMagic) != 0) {
        reason = "not a record (no magic)";
      } else if (c == nullptr) {
        reason = "bad header checksum";
      } else {
        const std::size_t total = kRecordHeaderSize + c->length;
        if (c->length > kMaxRecordPayload) {
          reason = "payload length " + std::to_string(c->length) + " exceeds the maximum of " +
                   std::to_string(kMaxRecordPayload) + " bytes";
        } else if (c->length > left - kRecordHeaderSize) {
          // The header is sound but the file ends first: a torn last record,
          // unless a whole record follows (a writer died mid-write and others
          // appended after it).
          const std::size_t next = next_start(pos + 1, /*torn_tail=*/false);
          if (next == size) {
            skip(pos, left, "torn record at end of file (" + std::to_string(left) + " of " +
                                std::to_string(total) + " bytes)");
            break;
          }
          skip(pos, next - pos, "torn record (" + std::to_string(next - pos) + " of " +
                                    std::to_string(total) + " bytes) before the next record");
          pos = next;
          continue;
        } else if (c->payload_ok) {
          spans_.push_back(RecordSpan{RecordSpan::Kind::kRecord, pos, total, {}});
          pos += total;
          continue;
        } else {
          reason = "payload checksum mismatch";
        }
      }
      const std::size_t stop = next_start(pos + 1, /*torn_tail=*/true);
      skip(pos, stop - pos, std::move(reason));
      pos = stop;
    }
    return std::move(spans_);
  }

 private:
  // The candidates before `from` are behind the reader for good: it only
  // moves forward, so the cursor does too.
  void seek(std::size_t from) {
    while (cursor_ < candidates_.size() && candidates_[cursor_].offset < from) ++cursor_;
  }

  // The whole candidate at `pos`, or null.
  const Candidate* candidate_at(std::size_t pos) {
    seek(pos);
    if (cursor_ < candidates_.size() && candidates_[cursor_].offset == pos &&
        candidates_[cursor_].whole) {
      return &candidates_[cursor_];
    }
    return nullptr;
  }

  // The first magic at or after `from` whose header CRC holds; with
  // `torn_tail`, also a magic too close to the end for a whole header (a
  // torn header). The end of the data if there is none.
  std::size_t next_start(std::size_t from, bool torn_tail) {
    seek(from);
    if (cursor_ == candidates_.size()) return data_.size();
    const Candidate& c = candidates_[cursor_];
    return c.whole || torn_tail ? c.offset : data_.size();
  }

  void skip(std::size_t offset, std::size_t length, std::string reason) {
    spans_.push_back(RecordSpan{RecordSpan::Kind::kSkipped, offset, length, std::move(reason)});
  }

  std::string_view data_;
  const std::vector<Candidate>& candidates_;
  std::size_t cursor_ = 0;
  std::vector<RecordSpan> spans_;
};

}  // namespace

std::string frame_record(std::string_view payload) {
  if (payload.size() > kMaxRecordPayload) {
    throw std::invalid_argument("SampleRecord of " + std::to_string(payload.size()) +
                                " bytes exceeds the maximum payload of " +
                                std::to_string(kMaxRecordPayload) + " bytes");
  }
  std::string out(kRecordHeaderSize + payload.size(), '\0');
  std::memcpy(out.data(), kRecordMagic, 4);
  put_u32(out.data() + 4, static_cast<std::uint32_t>(payload.size()));
  put_u32(out.data() + 8, crc32(payload));
  put_u32(out.data() + 12, crc32(out.data(), kHeaderCrcSpan));
  if (!payload.empty()) std::memcpy(out.data() + kRecordHeaderSize, payload.data(), payload.size());
  return out;
}

RecordLogScan scan_record_log(const char* data, std::size_t size) {
  if (data == nullptr && size != 0) throw std::invalid_argument("data must not be null");
  const std::string_view bytes(size == 0 ? "" : data, size);
  RecordLogScan scan;
  std::vector<Candidate> candidates = find_candidates(bytes, scan.bytes_examined);
  check_payloads(bytes, candidates, scan.bytes_examined);
  scan.spans = Scanner(bytes, candidates).run();
  return scan;
}

}  // namespace evokit
