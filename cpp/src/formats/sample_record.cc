// See evokit/formats/sample_record.h.
#include "evokit/formats/sample_record.h"

#include <cstring>

#include "evokit/record_log.h"

namespace evokit::formats {

namespace {

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_double(std::string& out, std::uint32_t number, double v) {
  put_varint(out, (number << 3) | 1);  // fixed64
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
}

void put_bytes(std::string& out, std::uint32_t number, const std::string& v) {
  put_varint(out, (number << 3) | 2);
  put_varint(out, v.size());
  out += v;
}

void put_uint(std::string& out, std::uint32_t number, std::uint64_t v) {
  put_varint(out, number << 3);  // varint
  put_varint(out, v);
}

}  // namespace

void append_sample_records(std::string& out, const SampleRecordChunk& chunk, const std::vector<SamplingInfo>& infos,
                           const double* rewards, const std::int64_t* env_steps) {
  std::string info, payload;
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const SamplingInfo& s = infos[i];
    info.clear();
    for (std::int64_t k : s.key) put_uint(info, 1, static_cast<std::uint64_t>(k));
    put_uint(info, 2, static_cast<std::uint64_t>(s.model_iter_id));
    put_uint(info, 3, s.mirrored ? 1 : 0);
    payload.clear();
    put_bytes(payload, 1, info);
    put_double(payload, 2, rewards[i]);
    put_bytes(payload, 3, chunk.config_fingerprint);
    put_bytes(payload, 4, chunk.model_fingerprint);
    put_uint(payload, 5, chunk.sampler_id);
    put_uint(payload, 6, static_cast<std::uint64_t>(env_steps[i]));
    put_double(payload, 7, chunk.time);
    put_uint(payload, 8, chunk.first_index + i);
    out += frame_record(payload);
  }
}

}  // namespace evokit::formats
