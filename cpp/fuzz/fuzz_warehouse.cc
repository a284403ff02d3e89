// libFuzzer harness: model warehouses through evokit::io::Warehouse. The
// input is warehouse.pb and an iteration's solver.pb, split at the first
// "\n--solver.pb--\n" (make_seeds.py writes seeds so); the iteration's
// model.onnx is cartpole_h8.onnx. The files are written to a directory of
// this process, then the warehouse is opened and its newest agent loaded.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "evokit/io/warehouse.h"
#include "fuzz_util.h"

namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) evokit::fuzz::broken("cannot write " + path.string());
}

// W/warehouse.pb, W/model_iter_id-0/{model.onnx, solver.pb}, made once.
const fs::path& warehouse_dir() {
  static const fs::path dir = [] {
    const fs::path d = fs::temp_directory_path() /
                       ("evokit-fuzz-warehouse-" + std::to_string(::getpid()));
    fs::create_directories(d / "model_iter_id-0");
    fs::copy_file(std::string(EVOKIT_SOURCE_DIR) + "/cpp/io/tests/data/cartpole_h8.onnx",
                  d / "model_iter_id-0" / "model.onnx", fs::copy_options::overwrite_existing);
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input = evokit::fuzz::as_string(data, size);
  const std::string marker = "\n--solver.pb--\n";
  const std::size_t cut = input.find(marker);
  const fs::path& dir = warehouse_dir();
  write(dir / "warehouse.pb", input.substr(0, cut));
  write(dir / "model_iter_id-0" / "solver.pb",
        cut == std::string::npos ? std::string() : input.substr(cut + marker.size()));
  evokit::fuzz::refused_or_read([&] {
    const evokit::io::Warehouse warehouse(dir.string());
    const std::int64_t k = warehouse.latest();
    warehouse.model_fingerprint(k);
    warehouse.config(k);
    evokit::io::ESAgent agent = warehouse.load_agent(k);
    agent.clone().add_noise();
  });
  return 0;
}
