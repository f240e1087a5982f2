// Temporary directories for tests that touch real files.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

namespace kairos::test_support {

// A new directory under /tmp named after `prefix` (the test removes it).
inline std::string temp_dir(const std::string& prefix) {
  std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
  EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
  return tmpl;
}

// A temp_dir() removed with everything in it when the object goes.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "kairos-test") : path_(temp_dir(prefix)) {}
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace kairos::test_support
