// The API's error body is valid JSON whatever the message quotes: a message
// or field that is not UTF-8 (hostile input echoed back, such as a query
// parameter's raw name) is escaped; UTF-8 passes unchanged.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <string>

#include "prod/api/job_json.h"

namespace kairos::api {
namespace {

namespace json = boost::json;

// The body as sent and parsed back; fails the test when it is not JSON.
json::value round_trip(std::string_view message, std::string_view field) {
  const std::string text = json::serialize(error_body("invalid_argument", message, field));
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  EXPECT_FALSE(ec) << "not JSON: " << text;
  return v;
}

TEST(ErrorBodyTest, InvalidUtf8IsEscapedAndTheBodyStaysJson) {
  const json::value v = round_trip("unknown query parameter 'page_si\x86\x93'", "page_si\x86\x93");
  ASSERT_TRUE(v.is_object());
  EXPECT_EQ(v.at("error").at("message").as_string(), "unknown query parameter 'page_si\\x86\\x93'");
  EXPECT_EQ(v.at("error").at("field").as_string(), "page_si\\x86\\x93");
  for (const char* bad : {"\xc0\xaf", "\xed\xa0\x80", "\xe2\x82", "\xf4\x90\x80\x80", "\xff",
                          "\x80", "a\xf0\x9f\x98"}) {
    const json::value b = round_trip(bad, "");
    ASSERT_TRUE(b.is_object()) << bad;
    EXPECT_NE(std::string(b.at("error").at("message").as_string()).find("\\x"), std::string::npos)
        << "not escaped: " << bad;
  }
}

TEST(ErrorBodyTest, Utf8PassesUnchanged) {
  const std::string zurich = "unknown zone 'Europe/Z\xc3\xbcrich' \xe2\x82\xac \xf0\x9f\x98\x80";
  const json::value v = round_trip(zurich, "schedule.zone");
  EXPECT_EQ(v.at("error").at("message").as_string(), zurich);
  EXPECT_EQ(v.at("error").at("field").as_string(), "schedule.zone");
  EXPECT_FALSE(round_trip("x", "").at("error").as_object().contains("field"));
}

}  // namespace
}  // namespace kairos::api
