// The flag table: command line, config file and --help come from one table.
#include "prod/cli/flags.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "prod/cli/server_flags.h"
#include "prod/log/log_event_log.h"
#include "tests/support/server_flags_parse.h"
#include "tests/support/temp_dir.h"

namespace kairos::cli {
namespace {

using flags_test_support::parse;
using flags_test_support::Parsed;

std::string write_file(const std::filesystem::path& dir, const std::string& name,
                       const std::string& text) {
  const auto path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

TEST(ServerFlags, DefaultsAndDerivedValues) {
  Parsed p = parse({"--data-dir", "/d"});
  ASSERT_FALSE(p.code) << p.err;
  EXPECT_EQ(p.flags.lmdb_dir, "/d");
  EXPECT_EQ(p.flags.shards, 8u);
  EXPECT_EQ(p.flags.workers, 2u);
  EXPECT_EQ(p.flags.lease.lease_ttl, absl::Seconds(30));
  EXPECT_EQ(p.flags.log_format, "text");
}

TEST(ServerFlags, StoreNamesTheDirectory) {
  Parsed p = parse({"--store=lmdb:/s", "--lease-ttl", "3s"});
  ASSERT_FALSE(p.code) << p.err;
  EXPECT_EQ(p.flags.lmdb_dir, "/s");
  EXPECT_EQ(p.flags.data_dir, "/s");
  EXPECT_EQ(p.flags.lease.heartbeat_period, absl::Milliseconds(800));
}

TEST(ServerFlags, BadInputNamesTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--data-dir", "/d", "--shards", "0"}, "--shards"},
      {{"--data-dir", "/d", "--shards", "5000"}, "--shards"},
      {{"--data-dir", "/d", "--workers", "x"}, "--workers"},
      {{"--data-dir", "/d", "--lease-ttl", "500ms"}, "--lease-ttl"},
      {{"--data-dir", "/d", "--lease-ttl", "3"}, "--lease-ttl"},
      {{"--data-dir", "/d", "--log-format", "xml"}, "--log-format"},
      {{"--data-dir", "/d", "--map-size", "16K"}, "--map-size"},
      {{"--data-dir", "/d", "--node-id", "a b"}, "--node-id"},
      {{"--data-dir", "/d", "--bogus"}, "--bogus"},
      {{"--data-dir", "/d", "--demo=yes"}, "--demo"},
      {{"--data-dir", "/d", "--demo-every", "7", "--demo"}, "--demo-every"},
      {{"--data-dir", "/d", "--demo-every", "5"}, "--demo-every"},
      {{"--data-dir", "/d", "--shards", "4", "--shards", "4"}, "--shards"},
      {{"--data-dir"}, "--data-dir"},
      {{}, "--data-dir"},
      {{"--store", "postgresql://h/db"}, "--store"},
      {{"--store", "lmdb:"}, "--store"},
      {{"--store", "lmdb:/a", "--data-dir", "/b"}, "--store"},
      {{"--data-dir", "/d", "stray"}, "stray"},
  };
  for (const auto& [args, flag] : cases) {
    Parsed p = parse(args);
    ASSERT_TRUE(p.code.has_value()) << args.size() << " " << flag;
    EXPECT_EQ(*p.code, 2) << flag;
    EXPECT_NE(p.err.find(flag), std::string::npos) << flag << ": " << p.err;
  }
}

TEST(ServerFlags, HelpListsEveryFlagWithItsDefault) {
  FlagTable t("kairos x", "kairos x [options]", "Does x.");
  std::uint32_t n = 7;
  t.add({"count", "N", "7", "how many", set_u32(&n, 0, 9)});
  const std::string u = t.usage();
  EXPECT_NE(u.find("--count N"), std::string::npos);
  EXPECT_NE(u.find("how many (default: 7)"), std::string::npos);
  EXPECT_NE(u.find("--help"), std::string::npos);
  Parsed p = parse({"--help"});
  EXPECT_EQ(p.code, 0);
}

TEST(ServerFlags, ConfigFileSetsFlagsAndTheCommandLineWins) {
  test_support::TempDir dir;
  const std::string cfg = write_file(
      dir.path(), "c.json",
      R"({"data-dir": "/from-file", "shards": 4, "workers": 1, "demo": true, "log-format": "json"})");
  Parsed p = parse({"--config", cfg, "--workers", "3"});
  ASSERT_FALSE(p.code) << p.err;
  EXPECT_EQ(p.flags.lmdb_dir, "/from-file");
  EXPECT_EQ(p.flags.shards, 4u);
  EXPECT_EQ(p.flags.workers, 3u);  // the command line wins
  EXPECT_TRUE(p.flags.demo);
  EXPECT_EQ(p.flags.log_format, "json");
}

TEST(ServerFlags, BadConfigFilesNameTheFileAndKey) {
  test_support::TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"shards": "many"})", "\"shards\""},
      {R"({"bogus": 1})", "\"bogus\""},
      {R"({"config": "x"})", "\"config\""},
      {R"({"demo": "yes"})", "\"demo\""},
      {R"({"shards": 4.5})", "\"shards\""},
      {R"({"shards": [1]})", "\"shards\""},
      {R"([1, 2])", "JSON object"},
      {R"({"shards": )", "not valid JSON"},
  };
  int i = 0;
  for (const auto& [text, what] : cases) {
    const std::string cfg = write_file(dir.path(), "c" + std::to_string(i++) + ".json", text);
    Parsed p = parse({"--config", cfg, "--data-dir", "/d"});
    ASSERT_EQ(p.code, 2) << text;
    EXPECT_NE(p.err.find(what), std::string::npos) << text << ": " << p.err;
    EXPECT_NE(p.err.find(cfg), std::string::npos) << text << ": " << p.err;
  }
  Parsed missing = parse({"--config", (dir.path() / "absent.json").string()});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("--config"), std::string::npos);
  const std::string big =
      write_file(dir.path(), "big.json", std::string(kMaxConfigFileSize + 10, ' '));
  Parsed huge = parse({"--config", big});
  EXPECT_EQ(huge.code, 2);
  EXPECT_NE(huge.err.find("larger than"), std::string::npos);
}

TEST(HostPort, ParsesAndRefuses) {
  HostPort hp;
  ASSERT_TRUE(parse_host_port("127.0.0.1:8080", &hp).ok());
  EXPECT_EQ(hp.host, "127.0.0.1");
  EXPECT_EQ(hp.port, 8080);
  ASSERT_TRUE(parse_host_port("[::1]:7070", &hp).ok());
  EXPECT_EQ(hp.host, "::1");
  ASSERT_TRUE(parse_host_port("example.org:0", &hp).ok());
  EXPECT_FALSE(parse_host_port("example.org:0", &hp, /*allow_port_zero=*/false).ok());
  for (const char* bad :
       {"", ":80", "host", "host:", "host:65536", "host:-1", "h st:80", "[::1:80", "host:80x"})
    EXPECT_FALSE(parse_host_port(bad, &hp).ok()) << bad;
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("127.1.2.3"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_TRUE(is_loopback_host("localhost"));
  EXPECT_FALSE(is_loopback_host("0.0.0.0"));
  EXPECT_FALSE(is_loopback_host("127.0.0.1.example.org"));
  EXPECT_FALSE(is_loopback_host("10.0.0.1"));
}

TEST(JsonLog, OneObjectPerEventWithTypedFields) {
  Event e;
  e.at = absl::FromUnixMicros(1'700'000'000'123'456);
  e.kind = "run.completed";
  e.with("job", std::string("a \"quoted\"\nname"))
      .with("token", std::uint64_t{7})
      .with("exit_code", std::int64_t{-1})
      .with("elapsed", absl::Milliseconds(1500))
      .with("kind", std::string("shadow"));
  const std::string line = format_event_json(e);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_NE(line.find(R"("kind":"run.completed")"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("job":"a \"quoted\"\nname")"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("token":7)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("exit_code":-1)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("elapsed":1.5)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("field.kind":"shadow")"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("at":"2023-11-14T22:13:20.123456Z")"), std::string::npos) << line;
}

}  // namespace
}  // namespace kairos::cli
