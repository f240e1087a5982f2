// Batch apply: every spec applied in one transaction or none; every invalid
// item reported by index; the size limit; the node's apply_jobs.
#include <gtest/gtest.h>

#include <optional>

#include "absl/strings/str_cat.h"
#include "core/kernel/job_store.h"
#include "core/kernel/keyspace.h"
#include "core/kernel/scheduler_node.h"
#include "tests/support/kernel_test_util.h"
#include "tests/support/node_world.h"
#include "tests/support/policy_fixture.h"

namespace kairos {
namespace {

using namespace test_support;

class BatchTest : public PolicyTest {
 protected:
  std::pair<TxnResult, BatchResult> batch(const std::vector<JobSpec>& specs) {
    return body<BatchResult>(
        [&](Txn& t, BatchResult* o) { return store.apply_batch(t, specs, o); });
  }
};

TEST_F(BatchTest, AppliesEveryItemInOrder) {
  create(interval_job("b"));
  JobSpec b2 = interval_job("b");
  b2.policy.max_attempts = 7;
  auto [r, out] = batch({interval_job("a"), b2, interval_job("c")});
  ASSERT_TRUE(r.committed()) << r.status;
  ASSERT_EQ(out.items.size(), 3u);
  EXPECT_TRUE(out.items[0].created);
  EXPECT_FALSE(out.items[1].created);
  EXPECT_TRUE(out.items[1].changed);
  EXPECT_EQ(out.items[1].job.spec.policy.max_attempts, 7u);
  EXPECT_EQ(out.items[2].job.spec.id, "c");
  EXPECT_TRUE(out.errors.empty());
  EXPECT_EQ(count(out.events, "job.created"), 2u);
  EXPECT_EQ(b.count_keys(keys::kJob), 3u);
  // Re-running it (a retry after an unknown outcome) changes nothing.
  const auto before = b.storage.contents();
  auto [r2, out2] = batch({interval_job("a"), b2, interval_job("c")});
  ASSERT_TRUE(r2.committed());
  for (const auto& item : out2.items) EXPECT_FALSE(item.changed);
  EXPECT_EQ(b.storage.contents(), before);
}

TEST_F(BatchTest, InvalidItemsAreAllReportedAndNothingIsWritten) {
  JobSpec bad1 = interval_job("x");
  bad1.policy.priority = 12;
  JobSpec bad2 = interval_job("y");
  bad2.policy.max_attempts = 0;
  const auto before = b.storage.contents();
  auto [r, out] = batch({interval_job("a"), bad1, interval_job("b"), bad2, interval_job("a")});
  EXPECT_EQ(r.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status.message().find("jobs[1]: policy.priority"), std::string_view::npos)
      << r.status;
  EXPECT_NE(r.status.message().find("3 of 5"), std::string_view::npos) << r.status;
  ASSERT_EQ(out.errors.size(), 3u);
  EXPECT_EQ(out.errors[0].index, 1u);
  EXPECT_NE(out.errors[0].status.message().find("policy.priority"), std::string_view::npos);
  EXPECT_EQ(out.errors[1].index, 3u);
  EXPECT_NE(out.errors[1].status.message().find("policy.max_attempts"), std::string_view::npos);
  EXPECT_EQ(out.errors[2].index, 4u);  // "a" twice
  EXPECT_NE(out.errors[2].status.message().find("appears twice"), std::string_view::npos);
  EXPECT_TRUE(out.items.empty());
  EXPECT_EQ(b.storage.contents(), before);
}

TEST_F(BatchTest, AnIdTwiceIsReportedEvenWhenItsFirstItemIsInvalid) {
  // Every failing item is reported: a client that fixes jobs[0] must not
  // meet the duplicate only on its next try.
  JobSpec bad = interval_job("a");
  bad.policy.priority = 12;
  const auto before = b.storage.contents();
  auto [r, out] = batch({bad, interval_job("b"), interval_job("a")});
  EXPECT_EQ(r.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status.message().find("jobs[0]: policy.priority"), std::string_view::npos)
      << r.status;
  ASSERT_EQ(out.errors.size(), 2u);
  EXPECT_EQ(out.errors[0].index, 0u);
  EXPECT_EQ(out.errors[1].index, 2u);
  EXPECT_NE(out.errors[1].status.message().find("appears twice"), std::string_view::npos);
  EXPECT_EQ(b.storage.contents(), before);
}

TEST_F(BatchTest, ARefusedItemRollsBackTheWholeBatch) {
  // "b" holds a record the store cannot decode: its apply fails after "a"
  // was already applied inside the same transaction.
  b.run([](Txn& t) {
    t.put(keys::job("b"), "garbage");
    return absl::OkStatus();
  });
  const auto before = b.storage.contents();
  auto [r, out] = batch({interval_job("a"), interval_job("b"), interval_job("c")});
  EXPECT_FALSE(r.committed());
  EXPECT_NE(r.status.message().find("jobs[1]: "), std::string_view::npos) << r.status;
  ASSERT_EQ(out.errors.size(), 1u);
  EXPECT_EQ(out.errors[0].index, 1u);
  EXPECT_TRUE(out.items.empty());
  EXPECT_TRUE(out.events.empty());
  EXPECT_EQ(b.storage.contents(), before);  // "a" was not created
}

TEST_F(BatchTest, SizeIsBounded) {
  auto [e, eo] = batch({});
  EXPECT_EQ(e.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(e.status.message().find("jobs: "), std::string_view::npos) << e.status;
  std::vector<JobSpec> many;
  for (std::size_t i = 0; i <= kMaxBatchSize; ++i)
    many.push_back(interval_job(absl::StrCat("j", i)));
  auto [r, out] = batch(many);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status.message().find("at most 1000 jobs per batch, got 1001"),
            std::string_view::npos)
      << r.status;
  EXPECT_EQ(b.count_keys(keys::kJob), 0u);
  many.pop_back();
  auto [ok, ok_out] = batch(many);
  ASSERT_TRUE(ok.committed()) << ok.status;
  EXPECT_EQ(b.count_keys(keys::kJob), kMaxBatchSize);
}

TEST(NodeBatch, ApplyJobsAnswersItemsOrErrors) {
  NodeWorld w;
  SchedulerNode& node = w.add_node(node_config("n1"), 7).node;
  node.start();
  std::optional<std::pair<absl::Status, BatchResult>> got;
  auto cb = [&](absl::Status s, BatchResult r) { got.emplace(std::move(s), std::move(r)); };
  node.apply_jobs({interval_job("a"), interval_job("b")}, cb);
  w.stepper.run(absl::Seconds(2));
  ASSERT_TRUE(got.has_value());
  ASSERT_TRUE(got->first.ok()) << got->first;
  EXPECT_EQ(got->second.items.size(), 2u);
  EXPECT_EQ(w.count_keys(keys::kJob), 2u);

  got.reset();
  JobSpec bad = interval_job("c");
  bad.policy.priority = -1;
  node.apply_jobs({interval_job("d"), bad}, cb);
  w.stepper.run(absl::Seconds(2));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->first.code(), absl::StatusCode::kInvalidArgument);
  ASSERT_EQ(got->second.errors.size(), 1u);
  EXPECT_EQ(got->second.errors[0].index, 1u);
  EXPECT_EQ(w.count_keys(keys::kJob), 2u);
}

}  // namespace
}  // namespace kairos
