// The sampling-log framing (evokit/record_log.h) for evokit.samplelog, which
// keeps the protobuf payloads, the files and their locks in Python.
#include <evokit/formats/sample_record.h>
#include <evokit/formats/update_records.h>
#include <evokit/record_log.h>
#include <evokit/solver.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>

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

  m.def(
      "decode_sample_record",
      [](const py::bytes& payload) -> py::object {
        formats::DecodedRecord r;
        const std::string error = formats::decode_sample_record(view_of(payload), r);
        if (!error.empty()) return py::str(error);
        py::dict out;
        out["key"] = r.info.key.to_vector();
        out["model_iter_id"] = r.info.model_iter_id;
        out["mirrored"] = r.info.mirrored;
        out["reward"] = r.reward;
        out["config_fingerprint"] = py::bytes(std::string(r.config_fingerprint));
        out["model_fingerprint"] = py::bytes(std::string(r.model_fingerprint));
        out["sampler_id"] = r.sampler_id;
        out["sample_index"] = r.sample_index ? py::object(py::int_(*r.sample_index)) : py::object(py::none());
        return std::move(out);
      },
      py::arg("payload"),
      "What evokit update reads of a SampleRecord payload (evokit/formats/update_records.h): a dict of "
      "its fields (sample_index None when absent), or a str saying why it is not a SampleRecord.");

  using formats::SelectedRecords;
  py::class_<SelectedRecords>(m, "SelectedRecords",
                              "The samples an update takes from its logs (select_update_records), kept in "
                              "the core: ESAgent.update_selected and shortfall_selected read them there.")
      .def("__len__", [](const SelectedRecords& s) { return s.infos.size(); })
      .def_property_readonly(
          "rewards",
          [](py::object self) {
            const auto& s = self.cast<const SelectedRecords&>();
            py::array_t<double> view({static_cast<py::ssize_t>(s.rewards.size())}, {sizeof(double)},
                                     s.rewards.data(), self);
            view.attr("setflags")(py::arg("write") = false);
            return view;
          },
          "The rewards of the samples taken, in log order (a read-only view).")
      .def_property_readonly(
          "iterations",
          [](const SelectedRecords& s) {
            std::set<std::int64_t> out;
            for (const SamplingInfo& info : s.infos) out.insert(info.model_iter_id);
            return out;
          },
          "The model iterations the samples taken were drawn at.")
      .def_readonly("dropped", &SelectedRecords::dropped, "Reason -> records dropped for it.")
      .def_property_readonly(
          "skipped",
          [](const SelectedRecords& s) {
            py::list out;
            for (const auto& k : s.skipped) out.append(py::make_tuple(k.path, k.offset, k.length, k.reason));
            return out;
          },
          "Each stretch of a log skipped: (path, offset, length, reason).")
      .def_readonly("log_errors", &SelectedRecords::log_errors, "One line for each log that could not be read.")
      .def_readonly("records_read", &SelectedRecords::records_read)
      .def_property_readonly(
          "taken_ids",
          [](const SelectedRecords& s) {
            py::list out;
            for (const std::string& id : s.taken.record_ids) out.append(py::bytes(id));
            return out;
          },
          "The record ids of the unnumbered records taken.")
      .def_property_readonly(
          "taken_runs",
          [](const SelectedRecords& s) {
            py::list out;
            for (const auto& [group, runs] : s.taken.runs) {
              for (const auto& [first, end] : runs) out.append(py::make_tuple(group.first, group.second, first, end));
            }
            return out;
          },
          "The numbered records taken: (sampler_id, model_iter_id, first, end) for each run of sample_index.");

  m.def(
      "select_update_records",
      [](const std::vector<std::string>& paths, const Solver& solver, const std::string& config_fingerprint,
         std::int64_t iteration, const std::set<std::int64_t>& window, int max_to_keep, bool corrects_older_samples,
         const std::string& sampling_type, const py::function& model_fingerprint,
         const std::vector<py::bytes>& consumed_ids,
         const std::vector<std::tuple<std::uint64_t, std::int64_t, std::uint64_t, std::uint64_t>>& consumed_runs,
         int num_threads, std::size_t chunk_bytes) {
        formats::UpdateRule rule;
        rule.config_fingerprint = config_fingerprint;
        rule.iteration = iteration;
        rule.window = window;
        rule.max_to_keep = max_to_keep;
        rule.corrects_older_samples = corrects_older_samples;
        rule.sampling_type = sampling_type;
        rule.model_fingerprint = [&model_fingerprint](std::int64_t k) {
          py::gil_scoped_acquire gil;  // asked on the calling thread, once per iteration
          return model_fingerprint(k).cast<std::string>();
        };
        for (const py::bytes& id : consumed_ids) rule.consumed.record_ids.insert(std::string(view_of(id)));
        for (const auto& [sampler, it, first, end] : consumed_runs) {
          if (first >= end) throw std::invalid_argument("consumed run [" + std::to_string(first) + ", " +
                                                        std::to_string(end) + ") is empty");
          rule.consumed.runs[{sampler, it}].emplace_back(first, end);
        }
        for (auto& [group, runs] : rule.consumed.runs) {  // sorted and merged, as contains() reads them
          std::sort(runs.begin(), runs.end());
          formats::SampleRuns merged;
          for (const auto& run : runs) {
            if (!merged.empty() && run.first <= merged.back().second) {
              merged.back().second = std::max(merged.back().second, run.second);
            } else {
              merged.push_back(run);
            }
          }
          runs = std::move(merged);
        }
        rule.rebuildable = [&solver](const SamplingInfo& info) {
          try {
            solver.check_member(info);
          } catch (const std::invalid_argument&) {
            return false;
          } catch (const std::out_of_range&) {  // a key beyond the noise table
            return false;
          }
          return true;
        };
        rule.num_threads = num_threads;
        rule.chunk_bytes = chunk_bytes;
        py::gil_scoped_release release;
        return std::make_unique<SelectedRecords>(formats::select_update_records(paths, rule));
      },
      py::arg("paths"), py::arg("solver"), py::kw_only(), py::arg("config_fingerprint"), py::arg("iteration"),
      py::arg("window"), py::arg("max_to_keep"), py::arg("corrects_older_samples"), py::arg("sampling_type"),
      py::arg("model_fingerprint"), py::arg("consumed_ids"), py::arg("consumed_runs"), py::arg("num_threads") = 1,
      py::arg("chunk_bytes") = std::size_t{16} << 20,
      "The samples of the logs at `paths` an update takes, in log order, and what it drops and skips, by the "
      "rule of evokit/formats/update_records.h (the warehouse's config fingerprint, its iteration k, the kept "
      "iterations and model_fingerprint(iteration) of each a record names, what earlier updates consumed; `solver` decides which keys "
      "can be rebuilt).");
}

}  // namespace evokit::bindings
