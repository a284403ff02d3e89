#include "evokit/io/state_file.h"

#include <stdexcept>

#include "evokit/formats/state_file.h"
#include "evokit/io/errors.h"
#include "file_util.h"

namespace evokit::io {

std::string seal_state(const std::string& body) { return formats::seal_state(body); }

bool unseal_state(const std::string& path, const std::string& bytes, std::string& body,
                  std::string& error) {
  try {
    body = formats::unseal_state(path, bytes);
  } catch (const std::invalid_argument& e) {
    error = e.what();
    return false;
  }
  return true;
}

void write_state_file(const std::string& path, const google::protobuf::MessageLite& message) {
  detail::atomic_write(path, seal_state(message.SerializeAsString()));
}

template <class E>
void read_state_file(const std::string& path, google::protobuf::MessageLite& message,
                     const std::string& what) {
  std::string bytes, body, error;
  if (!detail::read_file(path, bytes, error)) throw E(path + ": cannot read " + what + ": " + error);
  if (!unseal_state(path, bytes, body, error)) throw E(error);
  if (!message.ParseFromString(body)) {
    throw E(path + ": not a " + what + " (the bytes do not parse as " + message.GetTypeName() +
            ")");
  }
}

template void read_state_file<SolverFileError>(const std::string&, google::protobuf::MessageLite&,
                                               const std::string&);
template void read_state_file<WarehouseError>(const std::string&, google::protobuf::MessageLite&,
                                              const std::string&);

}  // namespace evokit::io
