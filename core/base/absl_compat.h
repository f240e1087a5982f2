// Bridges between the standard library and Debian 12's Abseil (20220623).
//
// Debian builds Abseil with its own absl::string_view, absl::optional and
// absl::variant (ABSL_OPTION_USE_STD_* are 0), so a std::string_view does not
// convert to absl::string_view implicitly. Kairos code uses std::string_view;
// wrap it with absl_sv() where an Abseil function (StrCat, StrAppend, Status
// constructors, ParseTime, ...) wants an absl::string_view.
#pragma once

#include <string_view>

#include "absl/strings/string_view.h"

namespace kairos {

inline absl::string_view absl_sv(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}
inline std::string_view std_sv(absl::string_view s) { return std::string_view(s.data(), s.size()); }

}  // namespace kairos
