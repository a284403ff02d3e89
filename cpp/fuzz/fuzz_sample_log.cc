// libFuzzer harness: sampling logs, through the core's framing
// (scan_record_log) and the io reader (parse_log). Checks the scan's
// contract for any bytes: the spans cover every byte once, in order; a
// record span is a sound frame; the work stays linear (bytes_examined at
// most 5 per byte, record_log.h).
#include <string>

#include "evokit/io/sample_log.h"
#include "evokit/record_log.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using evokit::fuzz::broken;
  const std::string bytes = evokit::fuzz::as_string(data, size);
  const evokit::RecordLogScan scan = evokit::scan_record_log(bytes.data(), bytes.size());
  std::uint64_t at = 0;
  for (const evokit::RecordSpan& span : scan.spans) {
    if (span.offset != at || span.length == 0) broken("spans do not tile the log");
    if (span.kind == evokit::RecordSpan::Kind::kRecord) {
      if (span.length < evokit::kRecordHeaderSize ||
          evokit::frame_record(std::string_view(bytes).substr(
              span.offset + evokit::kRecordHeaderSize, span.length - evokit::kRecordHeaderSize)) !=
              bytes.substr(span.offset, span.length)) {
        broken("a record span is not a sound frame");
      }
    } else if (span.reason.empty()) {
      broken("a skipped span without a reason");
    }
    at += span.length;
  }
  if (at != size) broken("spans do not reach the end of the log");
  if (scan.bytes_examined > 5 * static_cast<std::uint64_t>(size) + 16) {
    broken("bytes_examined " + std::to_string(scan.bytes_examined) + " for " +
           std::to_string(size) + " bytes");
  }
  evokit::fuzz::refused_or_read([&] {
    const evokit::io::LogContents log = evokit::io::parse_log(bytes, "fuzz.log");
    if (log.records.size() + log.skipped.size() != scan.spans.size()) {
      broken("parse_log lost or added spans");
    }
  });
  return 0;
}
