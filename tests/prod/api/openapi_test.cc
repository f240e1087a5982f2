// docs/openapi.yaml and the server agree: the paths and methods the spec
// lists are exactly those the router serves (both directions), and every
// request example that is a job is accepted by the decoder. The spec is
// read line by line in the layout it is written in (paths at two spaces,
// methods at four, one-line JSON examples after "value:").
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "prod/api/api_routes.h"
#include "prod/api/job_json.h"
#include "tests/support/node_world.h"

namespace kairos::api {
namespace {

std::string read_spec() {
  std::ifstream in(std::string(KAIROS_SOURCE_DIR) + "/docs/openapi.yaml");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(OpenApi, SpecAndRouterListTheSameRoutes) {
  const std::string spec = read_spec();
  ASSERT_FALSE(spec.empty());
  std::set<std::string> in_spec;
  const std::regex path_line(R"(^  (/\S*):\s*$)");
  const std::regex method_line(R"(^    (get|put|post|patch|delete):\s*$)");
  std::istringstream lines(spec);
  std::string line, path;
  bool in_paths = false;
  while (std::getline(lines, line)) {
    if (line == "paths:")
      in_paths = true;
    else if (!line.empty() && line[0] != ' ' && line[0] != '#')
      in_paths = false;
    if (!in_paths) continue;
    std::smatch m;
    if (std::regex_match(line, m, path_line)) path = m[1];
    if (std::regex_match(line, m, method_line)) {
      std::string method = m[1];
      for (char& c : method) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      in_spec.insert(method + " " + path);
    }
  }
  test_support::NodeWorld world;
  auto& node = world.add_node(test_support::node_config("n1"), 1);
  ApiRoutes api(node.node, node.metrics);
  std::set<std::string> served;
  const http::Router router = api.router();
  for (const auto& r : router.routes()) served.insert(r.method + " " + r.pattern);
  for (const auto& s : served)
    EXPECT_TRUE(in_spec.count(s)) << s << " is served but not in the spec";
  for (const auto& s : in_spec)
    EXPECT_TRUE(served.count(s)) << s << " is in the spec but not served";
  EXPECT_GE(served.size(), 14u);
}

TEST(OpenApi, JobExamplesDecode) {
  const std::string spec = read_spec();
  const std::regex example(R"(^\s+value: (\{.*\})\s*$)");
  std::istringstream lines(spec);
  std::string line;
  int jobs = 0, examples = 0;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, example)) continue;
    ++examples;
    boost::system::error_code ec;
    const boost::json::value v = boost::json::parse(std::string(m[1]), ec);
    ASSERT_FALSE(ec) << "example is not JSON: " << m[1];
    if (!v.as_object().contains("schedule")) continue;
    ++jobs;
    auto spec = job_spec_from_json(v);
    EXPECT_TRUE(spec.ok()) << m[1] << ": " << spec.status();
  }
  EXPECT_GE(jobs, 4);
  EXPECT_GE(examples, 6);
}

}  // namespace
}  // namespace kairos::api
