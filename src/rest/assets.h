// The Web UI's files, compiled into the binary: nothing is read from disk or the network.
#pragma once

#include <map>
#include <string>

namespace weir::rest {

struct Asset {
  std::string content;
  std::string contentType;
};

// By URL path ("/", "/index.html").
const std::map<std::string, Asset>& assets();

}  // namespace weir::rest
