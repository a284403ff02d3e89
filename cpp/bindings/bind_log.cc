// The sampling-log framing (evokit/record_log.h) for evokit.samplelog, which
// keeps the protobuf payloads, the files and their locks in Python.
#include <evokit/formats/sample_record.h>
#include <evokit/record_log.h>

#include <string>
#include <string_view>

#include "pybind11.h"

namespace evokit::bindings {

namespace {

// The bytes of a Python bytes object, read in place. Bytes are immutable
// and the caller's reference keeps them alive, so they may be read with the
// GIL released.
std::string_view view_of(const py::bytes& data) {
  char* buffer = nullptr;
  Py_ssize_t size = 0;
  if (PyBytes_AsStringAndSize(data.ptr(), &buffer, &size) != 0) throw py::error_already_set();
  return {buffer, static_cast<std::size_t>(size)};
}

}  // namespace

void bind_log(py::module_& m) {
  m.attr("RECORD_MAGIC") = py::bytes(kRecordMagic, sizeof(kRecordMagic));
  m.attr("RECORD_HEADER_SIZE") = kRecordHeaderSize;
  m.attr("MAX_RECORD_PAYLOAD") = kMaxRecordPayload;
  m.def(
      "frame_record",
      [](const py::bytes& payload) {
        const std::string_view bytes = view_of(payload);
        std::string framed;
        {
          py::gil_scoped_release release;
          framed = frame_record(bytes);
        }
        return py::bytes(framed);
      },
      py::arg("payload"),
      "The framed record of a sampling log: the 16-byte header (magic, length, payload CRC, "
      "header CRC), then the payload. ValueError for a payload over MAX_RECORD_PAYLOAD bytes.");
  m.def(
      "encode_sample_records",
      [](const std::vector<SamplingInfo>& infos, const DoubleIn& rewards, const Int64In& env_steps,
         const std::string& config_fingerprint, const std::string& model_fingerprint, std::uint64_t sampler_id,
         double time, std::uint64_t first_index) {
        require_length(rewards, static_cast<py::ssize_t>(infos.size()), "rewards");
        require_length(env_steps, static_cast<py::ssize_t>(infos.size()), "env_steps");
        formats::SampleRecordChunk chunk{config_fingerprint, model_fingerprint, sampler_id, time, first_index};
        std::string out;
        {
          py::gil_scoped_release release;
          formats::append_sample_records(out, chunk, infos, rewards.data(), env_steps.data());
        }
        return py::bytes(out);
      },
      py::arg("infos"), py::arg("rewards"), py::arg("env_steps"), py::arg("config_fingerprint"),
      py::arg("model_fingerprint"), py::arg("sampler_id"), py::arg("time"), py::arg("first_index"),
      "The framed SampleRecords of a sampler's chunk (evokit/formats/sample_record.h): infos[i] with "
      "rewards[i], env_steps[i] and sample_index first_index + i; the bytes protobuf gives for them.");
  m.def(
      "scan_record_log",
      [](const py::bytes& data) {
        const std::string_view bytes = view_of(data);
        RecordLogScan scan;
        {
          py::gil_scoped_release release;
          scan = scan_record_log(bytes.data(), bytes.size());
        }
        py::list spans(scan.spans.size());
        for (std::size_t i = 0; i < scan.spans.size(); ++i) {
          const RecordSpan& s = scan.spans[i];
          py::object reason = py::none();
          if (s.kind == RecordSpan::Kind::kSkipped) reason = py::str(s.reason);
          spans[i] = py::make_tuple(s.offset, s.length, reason);
        }
        return py::make_tuple(spans, scan.bytes_examined);
      },
      py::arg("data"),
      "The records and skipped stretches of a sampling log's bytes, in file order, and the "
      "bytes examined: ([(offset, length, reason)], bytes_examined), reason None for a record "
      "whose checksums hold (its payload is data[offset + 16 : offset + length]), else why the "
      "stretch is skipped. Linear in len(data) for any content.");
}

}  // namespace evokit::bindings
