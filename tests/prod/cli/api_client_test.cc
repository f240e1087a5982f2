// The API client: HTTP statuses and transport failures -> exit codes, the
// request it sends (token, If-Match, body), paging, the real Beast transport
// against a one-shot loopback server, and whole commands against a fake
// transport (so a refused add is shown to send nothing).
#include "prod/cli/api_client.h"

#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "prod/api/job_json.h"
#include "prod/cli/commands.h"

namespace kairos::cli {
namespace {

namespace json = boost::json;

HttpResponse response(int status, std::string body,
                      std::vector<std::pair<std::string, std::string>> headers = {}) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

TEST(ExitCodes, FollowTheContract) {
  auto code_of = [](int status, std::string body = "") {
    return exit_code(status_of_response(response(status, std::move(body))));
  };
  EXPECT_EQ(code_of(200), kExitOk);
  EXPECT_EQ(code_of(201), kExitOk);
  EXPECT_EQ(code_of(400), kExitUsage);
  EXPECT_EQ(code_of(413), kExitUsage);
  EXPECT_EQ(code_of(401), kExitError);
  EXPECT_EQ(code_of(404), kExitNotFound);
  EXPECT_EQ(code_of(409), kExitConflict);
  EXPECT_EQ(code_of(412), kExitConflict);
  EXPECT_EQ(code_of(503), kExitUnavailable);
  EXPECT_EQ(code_of(500), kExitError);
  EXPECT_EQ(exit_code(absl::DeadlineExceededError("t")), kExitUnavailable);
  EXPECT_EQ(exit_code(absl::UnavailableError("refused")), kExitUnavailable);
}

TEST(ExitCodes, TheServersFieldIsKept) {
  const absl::Status s = status_of_response(response(
      400,
      R"({"error":{"code":"invalid_argument","message":"must be in [0, 9], got 12","field":"policy.priority"}})"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(api::error_field(s), "policy.priority");
  EXPECT_EQ(describe(s), "policy.priority: must be in [0, 9], got 12");
  const absl::Status html = status_of_response(response(502, "<html>bad gateway</html>"));
  EXPECT_EQ(describe(html), "HTTP 502: <html>bad gateway</html>");
}

TEST(ServerUrl, PortAndBasePath) {
  auto u = parse_server_url("http://sched.internal:9000/kairos/");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->host, "sched.internal");
  EXPECT_EQ(u->port, 9000);
  EXPECT_EQ(u->base_path, "/kairos");
  auto d = parse_server_url("http://[::1]");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->host, "::1");
  EXPECT_EQ(d->port, 80);
  EXPECT_FALSE(d->tls);
  auto tls = parse_server_url("https://sched.internal");  // more in api_client_tls_test.cc
  ASSERT_TRUE(tls.ok()) << tls.status();
  EXPECT_TRUE(tls->tls);
  EXPECT_EQ(tls->port, 443);
  const auto bad = parse_server_url("sched.internal:8080");
  EXPECT_EQ(exit_code(bad.status()), kExitUsage);
  EXPECT_FALSE(parse_server_url("sched.internal:8080").ok());
  EXPECT_FALSE(parse_server_url("http://host:99999").ok());
  EXPECT_FALSE(parse_server_url("http://u:p@host").ok());
}

TEST(Client, SendsTokenIfMatchAndBodyAndReadsTheEtag) {
  HttpRequest seen;
  ApiClient client(
      [&](const HttpRequest& r) -> absl::StatusOr<HttpResponse> {
        seen = r;
        return response(200, R"({"id":"a"})", {{"etag", "\"7\""}});
      },
      "s3cret");
  const json::value body = json::object{{"force", true}};
  auto r = client.call("POST", "/v1/jobs/a:pause", &body, 6);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generation, 7u);
  EXPECT_EQ(seen.target, "/v1/jobs/a:pause");
  EXPECT_EQ(seen.body, R"({"force":true})");
  EXPECT_EQ(seen.headers, (std::vector<std::pair<std::string, std::string>>{
                              {"Authorization", "Bearer s3cret"}, {"If-Match", "\"6\""}}));
}

TEST(Client, ListFollowsPageTokensUpToTheLimit) {
  std::vector<std::string> targets;
  ApiClient client(
      [&](const HttpRequest& r) -> absl::StatusOr<HttpResponse> {
        targets.push_back(r.target);
        if (r.target.find("page_token=p2") != std::string::npos)
          return response(200, R"({"jobs":[{"id":"c"}]})");
        return response(200, R"({"jobs":[{"id":"a"},{"id":"b"}],"next_page_token":"p2"})");
      },
      "");
  auto all = list_jobs(client, "namespace=x", 0);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 3u);
  ASSERT_EQ(targets.size(), 2u);
  EXPECT_EQ(targets[0], "/v1/jobs?namespace=x&page_size=500");
  EXPECT_EQ(targets[1], "/v1/jobs?namespace=x&page_size=500&page_token=p2");
  targets.clear();
  auto two = list_jobs(client, "", 2);
  EXPECT_EQ(two->size(), 2u);
  EXPECT_EQ(targets.size(), 1u);
  // A server repeating its token cannot make the client loop forever.
  ApiClient looping(
      [](const HttpRequest&) -> absl::StatusOr<HttpResponse> {
        return response(200, R"({"jobs":[{"id":"a"}],"next_page_token":"same"})");
      },
      "");
  EXPECT_FALSE(list_jobs(looping, "", 0).ok());
}

// A one-shot HTTP server on loopback: answers one request with `reply`.
class OneShotServer {
 public:
  explicit OneShotServer(std::string reply)
      : acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this, reply = std::move(reply)] {
      boost::asio::ip::tcp::socket s(io_);
      acceptor_.accept(s);
      boost::asio::streambuf buf;
      boost::system::error_code ec;
      boost::asio::read_until(s, buf, "\r\n\r\n", ec);
      request_ =
          std::string(boost::asio::buffers_begin(buf.data()), boost::asio::buffers_end(buf.data()));
      boost::asio::write(s, boost::asio::buffer(reply), ec);
    });
  }
  ~OneShotServer() { thread_.join(); }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  const std::string& request() const { return request_; }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::thread thread_;
  std::string request_;
};

TEST(BeastTransport, RoundTripOverLoopback) {
  absl::StatusOr<HttpResponse> r;
  std::string request;
  {
    OneShotServer server(
        "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 58\r\n"
        "Connection: close\r\n\r\n"
        R"({"error":{"code":"not_found","message":"no job 'x'"}}     )");
    auto url = parse_server_url(absl::StrCat("http://127.0.0.1:", server.port(), "/base"));
    ASSERT_TRUE(url.ok());
    r = beast_transport(*url, absl::Seconds(30))(HttpRequest{"GET", "/v1/jobs/x", {}, ""});
  }
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(exit_code(status_of_response(*r)), kExitNotFound);
}

TEST(BeastTransport, ResponsesOverTheBoundAreRefused) {
  absl::StatusOr<HttpResponse> r;
  {
    OneShotServer server(
        absl::StrCat("HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n", std::string(2000, 'x')));
    auto url = parse_server_url(absl::StrCat("http://127.0.0.1:", server.port()));
    r = beast_transport(*url, absl::Seconds(30), 1000)(HttpRequest{"GET", "/", {}, ""});
  }
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("larger than 1000 bytes"), std::string_view::npos);
}

TEST(BeastTransport, ConnectionRefusedIsUnavailable) {
  std::uint16_t port = 0;
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    port = a.local_endpoint().port();
  }
  auto url = parse_server_url(absl::StrCat("http://127.0.0.1:", port));
  auto r = beast_transport(*url, absl::Seconds(30))(HttpRequest{"GET", "/", {}, ""});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(exit_code(r.status()), kExitUnavailable) << r.status();
}

// ---- whole commands against a fake server -------------------------------------

struct Outcome {
  int code = -1;
  std::string out, err;
};

class Commands : public testing::Test {
 protected:
  void SetUp() override {
    set_transport_for_testing([this](const HttpRequest& r) -> absl::StatusOr<HttpResponse> {
      requests.push_back(r);
      if (!replies.empty()) {
        auto reply = replies.front();
        replies.erase(replies.begin());
        return reply;
      }
      return response(500, "");
    });
  }
  void TearDown() override { set_transport_for_testing(nullptr); }

  Outcome run(int (*command)(int, char**), std::vector<std::string> args) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();
    Outcome r;
    r.code = command(static_cast<int>(argv.size()), argv.data());
    r.out = testing::internal::GetCapturedStdout();
    r.err = testing::internal::GetCapturedStderr();
    return r;
  }

  std::vector<HttpRequest> requests;
  std::vector<absl::StatusOr<HttpResponse>> replies;
};

TEST_F(Commands, RefusedAddSendsNothing) {
  Outcome r = run(job_command, {"job", "add", "--cron", "61 * * * *", "--", "/bin/true"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("flag --cron (schedule.cron)"), std::string::npos) << r.err;
  r = run(job_command,
          {"job", "add", "--cron", "0 * * * *", "--tz", "Mars/Olympus", "--", "/bin/true"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("flag --tz"), std::string::npos) << r.err;
  r = run(job_command, {"job", "add", "--every", "1m", "/bin/true"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("after `--`"), std::string::npos) << r.err;
  EXPECT_TRUE(requests.empty());
}

TEST_F(Commands, AddPostsTheCodecsJsonAndPrintsTheId) {
  replies.push_back(response(201, "{}"));
  Outcome r = run(job_command, {"job", "add", "--every", "30s", "--label", "team=data", "--label",
                                "tier=1", "--retries", "0", "--", "/bin/echo", "--flag"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/v1/jobs");
  auto sent = api::decode_job_spec(requests[0].body);
  ASSERT_TRUE(sent.ok()) << sent.status();
  EXPECT_EQ(sent->labels.size(), 2u);
  EXPECT_EQ(sent->policy.max_attempts, 1u);
  EXPECT_EQ(std::get<CommandPayload>(sent->payload).argv,
            (std::vector<std::string>{"/bin/echo", "--flag"}));
  EXPECT_EQ(r.out, absl::StrCat("created job ", sent->id, "\n"));
  EXPECT_EQ(sent->id.size(), 20u);  // job- + 16 hex
}

TEST_F(Commands, AddThatMayHaveHappenedTellsHowToRetry) {
  replies.push_back(absl::DeadlineExceededError("no answer within 30s"));
  Outcome r = run(job_command, {"job", "add", "--id", "tick", "--every", "1m", "--", "/bin/true"});
  EXPECT_EQ(r.code, kExitUnavailable);
  EXPECT_NE(r.err.find("retry with --id tick"), std::string::npos) << r.err;
}

TEST_F(Commands, ServerStatusesBecomeExitCodes) {
  replies.push_back(response(404, R"({"error":{"code":"not_found","message":"no job 'x'"}})"));
  EXPECT_EQ(run(job_command, {"job", "get", "x"}).code, kExitNotFound);
  replies.push_back(response(412, R"({"error":{"code":"precondition_failed","message":"gen"}})"));
  EXPECT_EQ(run(job_command, {"job", "pause", "x", "--if-generation", "3"}).code, kExitConflict);
  EXPECT_EQ(requests.back().target, "/v1/jobs/x:pause");
  EXPECT_EQ(requests.back().headers.back(),
            (std::pair<std::string, std::string>{"If-Match", "\"3\""}));
  replies.push_back(response(503, R"({"error":{"code":"unavailable","message":"no leader"}})"));
  EXPECT_EQ(run(job_command, {"job", "cancel", "x"}).code, kExitUnavailable);
  EXPECT_EQ(requests.back().method, "DELETE");
  EXPECT_EQ(run(job_command, {"job", "get"}).code, kExitUsage);
  EXPECT_EQ(run(job_command, {"job", "frobnicate"}).code, kExitUsage);
  EXPECT_EQ(run(job_command, {"job", "ledger", "x", "--from", "yesterday"}).code, kExitUsage);
}

TEST_F(Commands, LsPrintsATableOrTheJson) {
  const std::string page =
      R"({"jobs":[{"id":"a","namespace":"default","schedule":{"every":"10s"},"status":{"state":"active","paused":false,"generation":1,"next_due_at":null}}]})";
  replies.push_back(response(200, page));
  Outcome r = run(job_command, {"job", "ls", "--namespace", "default", "--selector", "team=data"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(requests.back().target,
            "/v1/jobs?namespace=default&selector=team%3Ddata&page_size=500");
  EXPECT_EQ(r.out,
            "ID  NAMESPACE  SCHEDULE   STATE   NEXT DUE  GEN\n"
            "a   default    every 10s  active  -         1\n");
  replies.push_back(response(200, page));
  r = run(job_command, {"job", "ls", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(*api::parse_json(r.out), *api::parse_json(page));
}

TEST_F(Commands, ApplyDryRunWritesNothing) {
  const std::string dir = testing::TempDir();
  const std::string file = dir + "/apply.json";
  {
    std::FILE* f = std::fopen(file.c_str(), "w");
    std::fputs(
        R"({"jobs":[{"id":"a","schedule":{"every":"10s"},"command":{"argv":["/bin/true"]}}]})", f);
    std::fclose(f);
  }
  replies.push_back(response(404, R"({"error":{"code":"not_found","message":"no job"}})"));
  Outcome r = run(apply_command, {"apply", "-f", file, "--dry-run"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out,
            "create a (namespace default)\n1 to create, 0 to change, 0 unchanged, 0 to cancel\n");
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "GET");

  replies.push_back(response(404, R"({"error":{"code":"not_found","message":"no job"}})"));
  replies.push_back(response(201, "{}"));
  r = run(apply_command, {"apply", "-f", file});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(requests.back().method, "PUT");
  EXPECT_EQ(requests.back().target, "/v1/jobs/a");
  EXPECT_NE(r.out.find("created job a\n"), std::string::npos) << r.out;
  EXPECT_EQ(run(apply_command, {"apply"}).code, kExitUsage);
}

TEST_F(Commands, EditSavesWithIfMatchAndReportsAConcurrentChange) {
  const std::string job =
      R"({"id":"a","schedule":{"every":"10s"},"command":{"argv":["/bin/true"]},"policy":{"priority":5},"status":{"generation":4}})";
  setenv("TMPDIR", testing::TempDir().c_str(), 1);  // the kept edit goes there
  setenv("VISUAL", R"(sed -i s/\"priority\":\ 5/\"priority\":\ 6/)", 1);
  replies.push_back(response(200, job, {{"ETag", "\"4\""}}));
  replies.push_back(response(412, R"({"error":{"code":"precondition_failed","message":"gen"}})"));
  Outcome r = run(job_command, {"job", "edit", "a"});
  EXPECT_EQ(r.code, kExitConflict) << r.err;
  EXPECT_NE(r.err.find("changed on the server since generation 4"), std::string::npos) << r.err;
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].method, "PUT");
  EXPECT_EQ(requests[1].headers.back(), (std::pair<std::string, std::string>{"If-Match", "\"4\""}));
  auto sent = api::decode_job_spec(requests[1].body);
  ASSERT_TRUE(sent.ok()) << sent.status();
  EXPECT_EQ(sent->policy.priority, 6);
  unsetenv("VISUAL");
}

}  // namespace
}  // namespace kairos::cli
