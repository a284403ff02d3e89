// A sampling log's file (proto/evokit.proto, "Sampling logs"; the framing is
// record_log.h): how it is opened, appended to and read, written once for
// Python's evokit/online/samplelog.py and the C++ io library's LogWriter and
// read_log. POSIX files: flock, O_APPEND, fsync.
//
// Every refusal is a std::invalid_argument of one line starting with the
// log's path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "evokit/record_log.h"

namespace evokit::formats {

// Opens (creating it and its parent directories) the log at `path` for
// appending: O_WRONLY | O_APPEND | O_CREAT, a regular file, its directory
// entry fsynced when it was created. The caller owns the descriptor.
int open_log_for_append(const std::string& path);

// Appends `batch` (the frames of `records` records) to the log open as `fd`
// whole or not at all: under an exclusive flock, one write (continued after
// a partial one), fsync unless `fsync` is false; if the write or the fsync
// fails the file is cut back to the length it had, and the refusal says so.
void append_to_log(int fd, const std::string& path, std::string_view batch, std::size_t records, bool fsync);

// The bytes of the log at `path`, read under a shared flock (none where the
// file system has no flock), so that no appender of this module is mid-batch.
std::string read_log_file(const std::string& path);

// The log at `path` read as read_log_file reads it, in pieces of about
// `chunk_bytes` (memory: chunk_bytes plus one record's largest size), each
// handed to on_piece(data, base, spans): data holds the file's bytes
// [base, base + data.size()), spans the records and skipped stretches in
// them with file offsets, in file order, the pieces one after another. The
// records are exactly the ones scan_record_log finds in the whole file;
// a skipped stretch that crosses a piece's end comes as two stretches.
using LogPieceFn = std::function<void(std::string_view data, std::uint64_t base, const std::vector<RecordSpan>& spans)>;
void scan_log_file(const std::string& path, std::size_t chunk_bytes, const LogPieceFn& on_piece);

}  // namespace evokit::formats
