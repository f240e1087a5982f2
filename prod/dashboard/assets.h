// The dashboard's static files (prod/dashboard/assets/), compiled into the
// binary: prod/CMakeLists.txt runs prod/dashboard/embed_assets.cmake, which
// writes every file of that directory as a byte array into a generated .cc
// that defines embedded_assets(). Nothing is read from disk at run time.
#pragma once

#include <string_view>
#include <vector>

namespace kairos::dashboard {

struct Asset {
  std::string_view name;  // the file name, e.g. "app.js"
  std::string_view data;  // its bytes
};

// In file-name order.
const std::vector<Asset>& embedded_assets();

}  // namespace kairos::dashboard
