#include "core/ports/payload.h"

#include <gtest/gtest.h>

namespace kairos {
namespace {

std::string error_of(const Payload& p) { return std::string(validate(p).message()); }

TEST(Payload, CommandValidation) {
  EXPECT_TRUE(validate(CommandPayload{{"/bin/echo", "hi"}, {{"A", "1"}}, ""}).ok());
  EXPECT_EQ(error_of(CommandPayload{}), "payload.command.argv: must not be empty");
  EXPECT_NE(error_of(CommandPayload{{"x"}, {{"A=B", "1"}}, ""}).find("'A=B'"), std::string::npos);
}

TEST(Payload, HttpValidation) {
  HttpPayload ok;
  ok.url = "https://example.test/hook";
  EXPECT_TRUE(validate(ok).ok());
  HttpPayload bad_scheme = ok;
  bad_scheme.url = "ftp://x";
  EXPECT_NE(error_of(bad_scheme).find("must start with http:// or https://"), std::string::npos);
  HttpPayload no_host = ok;
  no_host.url = "http:///x";
  EXPECT_NE(error_of(no_host).find("has no host"), std::string::npos);
  HttpPayload bad_method = ok;
  bad_method.method = "GE T";
  EXPECT_NE(error_of(bad_method).find("payload.http.method"), std::string::npos);
  HttpPayload bad_header = ok;
  bad_header.headers = {{"X-Ok", "line\nbreak"}};
  EXPECT_NE(error_of(bad_header).find("payload.http.headers.X-Ok"), std::string::npos);
}

}  // namespace
}  // namespace kairos
