// How the RapidCheck tests run a property on a seed of their own.
//
// Purpose. RC_GTEST_PROP and rc::check draw every run from one process-wide
// seed (set by RC_PARAMS, random otherwise), so calling them in a loop
// repeats the same cases. The tests that want more cases, cases that are the
// same in every CI run, or a planted bug caught on a known seed call
// check_seeded() instead: one seed, one test count, one verdict.
//
// Guarantees. The same property, seed and count generate the same cases and
// the same verdict on every run. When the property fails (or when `print` is
// set) the seed and RapidCheck's result (the shrunk counterexample) are
// printed to stderr, so a failure names what reproduces it.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <iostream>
#include <string>
#include <utility>

namespace kairos::test_support {

// Runs `property` (a callable of no arguments, as given to rc::check) on
// `tests` cases drawn from `seed`; true if every case passed.
template <typename Property>
bool check_seeded(const std::string& description, std::uint64_t seed, int tests,
                  Property&& property, bool print = false) {
  rc::detail::TestParams params;
  params.seed = seed;
  params.maxSuccess = tests;
  rc::detail::TestMetadata metadata;
  metadata.id = metadata.description = description;
  const auto result = rc::detail::checkTestable(std::forward<Property>(property), metadata, params);
  const bool ok = result.template is<rc::detail::SuccessResult>();
  if (print || !ok) {
    std::cerr << description << " (seed " << seed << ", " << tests << " tests): ";
    rc::detail::printResultMessage(result, std::cerr);
    std::cerr << std::endl;
  }
  return ok;
}

}  // namespace kairos::test_support
