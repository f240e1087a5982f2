// ScriptedAnswers: a scripted path answers its statuses in order and then
// repeats the last; other paths are not scripted; malformed scripts are
// refused naming the part at fault.
#include "tests/e2e/fencing_sink/scripted_answers.h"

#include <gtest/gtest.h>

namespace kairos::fencing_sink {
namespace {

TEST(ScriptedAnswersTest, StatusesInOrderThenTheLastRepeats) {
  ScriptedAnswers a;
  std::string error;
  ASSERT_TRUE(a.add("/flaky=503,502,200", &error)) << error;
  ASSERT_TRUE(a.add("/bad=404", &error)) << error;
  EXPECT_EQ(a.next("/flaky"), 503);
  EXPECT_EQ(a.next("/flaky?x=1"), 502) << "the query is not part of the path";
  EXPECT_EQ(a.next("/flaky"), 200);
  EXPECT_EQ(a.next("/flaky"), 200);
  EXPECT_EQ(a.next("/bad"), 404);
  EXPECT_EQ(a.next("/bad"), 404);
  EXPECT_EQ(a.next("/other"), std::nullopt);
  EXPECT_EQ(a.next("/flaky/x"), std::nullopt);
}

TEST(ScriptedAnswersTest, MalformedScriptsAreRefusedNamingThePart) {
  ScriptedAnswers a;
  std::string error;
  EXPECT_FALSE(a.add("/x", &error));
  EXPECT_NE(error.find("PATH=S1"), std::string::npos) << error;
  EXPECT_FALSE(a.add("x=200", &error));
  EXPECT_NE(error.find("'x'"), std::string::npos) << error;
  EXPECT_FALSE(a.add("/x?q=200", &error));
  EXPECT_FALSE(a.add("/x=", &error));
  EXPECT_FALSE(a.add("/x=200,", &error));
  EXPECT_FALSE(a.add("/x=99", &error));
  EXPECT_NE(error.find("'99'"), std::string::npos) << error;
  EXPECT_FALSE(a.add("/x=600", &error));
  EXPECT_FALSE(a.add("/x=2OO", &error));
  std::string many = "/x=200";
  for (int i = 0; i < 64; ++i) many += ",200";
  EXPECT_FALSE(a.add(many, &error));
  EXPECT_NE(error.find("64"), std::string::npos) << error;
  EXPECT_TRUE(a.empty()) << "nothing refused was kept";
  ASSERT_TRUE(a.add("/x=200", &error));
  EXPECT_FALSE(a.add("/x=500", &error));
  EXPECT_NE(error.find("twice"), std::string::npos) << error;
}

}  // namespace
}  // namespace kairos::fencing_sink
