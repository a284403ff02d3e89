// PARL EvoKit's sampling log, as the online-sampling program of its "Example
// for Online Products" writes it and its offline-update program reads it:
// one record per sample, in the machine's byte order (little-endian here),
//
//   float32 reward | int32 size | size bytes: a serialized SamplingInfo
//
// and nothing else: no magic, no checksums, no fingerprints. EvoKit's own
// sampling logs (evokit/io/sample_log.h, what `evokit update` reads) are
// framed and checked; this format is for programs ported from PARL
// (evokit_online_sampling --model_dir, evokit_offline_update).
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "evokit/io/io.h"

namespace evokit_demo {

struct RawSamples {
  std::vector<evokit::proto::SamplingInfo> infos;
  std::vector<float> rewards;
};

// Writes `samples` to `path` (replacing it), as PARL's program does.
inline void write_raw_log(const std::string& path, const RawSamples& samples) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(path + ": cannot open the sampling log for writing");
  for (std::size_t i = 0; i < samples.infos.size(); ++i) {
    const std::string data = samples.infos[i].SerializeAsString();
    const auto size = static_cast<std::int32_t>(data.size());
    out.write(reinterpret_cast<const char*>(&samples.rewards[i]), sizeof(float));
    out.write(reinterpret_cast<const char*>(&size), sizeof(size));
    out.write(data.data(), size);
  }
  out.close();
  if (!out) throw std::runtime_error(path + ": cannot write the sampling log");
}

// Every record of the log at `path`. A record cut short, a negative size or
// bytes that are not a SamplingInfo throw std::runtime_error naming the file,
// the record and its byte offset.
inline RawSamples read_raw_log(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open the sampling log");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  RawSamples out;
  std::size_t offset = 0;
  constexpr std::size_t kHeader = sizeof(float) + sizeof(std::int32_t);
  while (offset < bytes.size()) {
    const std::string where = path + ": record " + std::to_string(out.infos.size()) +
                              " at byte " + std::to_string(offset);
    if (bytes.size() - offset < kHeader) {
      throw std::runtime_error(where + ": cut short (" + std::to_string(bytes.size() - offset) +
                               " bytes left, a record header takes " + std::to_string(kHeader) +
                               ")");
    }
    float reward;
    std::int32_t size;
    std::memcpy(&reward, bytes.data() + offset, sizeof(float));
    std::memcpy(&size, bytes.data() + offset + sizeof(float), sizeof(size));
    offset += kHeader;
    if (size < 0 || static_cast<std::size_t>(size) > bytes.size() - offset) {
      throw std::runtime_error(where + ": its SamplingInfo takes " + std::to_string(size) +
                               " bytes, " + std::to_string(bytes.size() - offset) + " are left");
    }
    evokit::proto::SamplingInfo info;
    if (!info.ParseFromArray(bytes.data() + offset, size)) {
      throw std::runtime_error(where + ": its " + std::to_string(size) +
                               " bytes are not a SamplingInfo");
    }
    offset += static_cast<std::size_t>(size);
    out.infos.push_back(std::move(info));
    out.rewards.push_back(reward);
  }
  return out;
}

}  // namespace evokit_demo
