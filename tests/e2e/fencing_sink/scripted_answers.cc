#include "tests/e2e/fencing_sink/scripted_answers.h"

#include <algorithm>
#include <charconv>

namespace kairos::fencing_sink {

bool ScriptedAnswers::add(std::string_view script, std::string* error) {
  const auto eq = script.find('=');
  if (eq == std::string_view::npos) {
    *error = "expected PATH=S1,S2,..., got '" + std::string(script) + "'";
    return false;
  }
  const std::string path(script.substr(0, eq));
  if (path.empty() || path.front() != '/' || path.find('?') != std::string::npos) {
    *error = "path '" + path + "' must start with '/' and have no query";
    return false;
  }
  if (scripts_.count(path) != 0) {
    *error = "path '" + path + "' is scripted twice";
    return false;
  }
  Script s;
  std::string_view rest = script.substr(eq + 1);
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    int status = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), status);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || status < 200 ||
        status > 599) {
      *error = "status '" + std::string(item) + "' of path '" + path + "' is not in 200..599";
      return false;
    }
    if (s.statuses.size() == 64) {
      *error = "path '" + path + "' has more than 64 statuses";
      return false;
    }
    s.statuses.push_back(status);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  scripts_.emplace(path, std::move(s));
  return true;
}

std::optional<int> ScriptedAnswers::next(std::string_view target) {
  const auto it = scripts_.find(target.substr(0, target.find('?')));
  if (it == scripts_.end()) return std::nullopt;
  Script& s = it->second;
  const int status = s.statuses[std::min(s.served, s.statuses.size() - 1)];
  ++s.served;
  return status;
}

}  // namespace kairos::fencing_sink
