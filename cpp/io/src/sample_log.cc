#include "evokit/io/sample_log.h"

#include <unistd.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <stdexcept>

#include "evokit/formats/log_file.h"
#include "evokit/io/errors.h"
#include "evokit/record_log.h"

namespace evokit::io {

namespace {

std::string serialize_deterministic(const proto::SampleRecord& record) {
  std::string payload;
  {
    google::protobuf::io::StringOutputStream stream(&payload);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    record.SerializeToCodedStream(&coded);
  }
  return payload;
}

}  // namespace

std::string SkippedBytes::to_string() const {
  return path + ": skipped " + std::to_string(length) + " bytes at offset " +
         std::to_string(offset) + ": " + reason;
}

std::string encode_record(const proto::SampleRecord& record) {
  return frame_record(serialize_deterministic(record));
}

LogContents parse_log(const std::string& bytes, const std::string& path) {
  LogContents result;
  for (RecordSpan& span : scan_record_log(bytes.data(), bytes.size()).spans) {
    if (span.kind == RecordSpan::Kind::kSkipped) {
      result.skipped.push_back(
          SkippedBytes{path, span.offset, span.length, std::move(span.reason)});
      continue;
    }
    LogRecord rec{path, span.offset, {}};
    const char* payload = bytes.data() + span.offset + kLogHeaderSize;
    if (rec.record.ParseFromArray(payload, static_cast<int>(span.length - kLogHeaderSize))) {
      result.records.push_back(std::move(rec));
    } else {
      // Both checksums hold, so the frame itself is sound: skip exactly
      // this record.
      result.skipped.push_back(
          SkippedBytes{path, span.offset, span.length, "payload is not a SampleRecord"});
    }
  }
  return result;
}

LogContents read_log(const std::string& path) {
  try {
    return parse_log(formats::read_log_file(path), path);
  } catch (const std::invalid_argument& e) {
    throw LogError(e.what());
  }
}

// ---- LogWriter ---------------------------------------------------------------

LogWriter::LogWriter(std::string path, bool fsync) : path_(std::move(path)), fsync_(fsync) {
  try {
    fd_ = formats::open_log_for_append(path_);
  } catch (const std::invalid_argument& e) {
    throw LogError(e.what());
  }
}

LogWriter::~LogWriter() { close(); }

void LogWriter::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

bool LogWriter::closed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fd_ < 0;
}

void LogWriter::append(const proto::SampleRecord& record) {
  append(std::vector<proto::SampleRecord>{record});
}

void LogWriter::append(const std::vector<proto::SampleRecord>& records) {
  std::string batch;
  for (const auto& r : records) batch += encode_record(r);
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0) throw std::logic_error(path_ + ": append to a closed LogWriter");
  try {
    formats::append_to_log(fd_, path_, batch, records.size(), fsync_);
  } catch (const std::invalid_argument& e) {
    throw LogError(e.what());
  }
}

}  // namespace evokit::io
