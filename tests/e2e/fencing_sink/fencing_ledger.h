// FencingLedger: the logic of the fencing sink, a job target that follows
// the HTTP pattern of docs/FENCING.md exactly.
//
// Purpose. The e2e tests point webhook jobs at the sink (main.cc) and read
// back what it did: which effects were applied, which duplicates were
// answered from the first result, which stale attempts were refused. The
// ledger is that logic, without sockets, so it can be tested directly.
//
// Rules, per idempotency key (the Idempotency-Key header; the run's
// identity, the same for every attempt of one run):
//   - a request without an Idempotency-Key, or without a Kairos-Fencing-Token
//     that is a decimal number, is refused: 400, nothing recorded;
//   - a token lower than the highest one seen for the key is stale: 409,
//     nothing applied (counted in `rejected`); an equal token is the same
//     attempt again;
//   - the first request for a key applies the effect (its body, appended to
//     `effects`) and its answer (200 and a small JSON body) is kept;
//   - a later request for the key with a token at least as high is a
//     duplicate: the highest token is raised to it and the kept first answer
//     is sent again, unchanged (with Idempotent-Replayed: true), so a retry
//     learns what the first attempt achieved and nothing is applied twice.
// Bounds: at most max_keys keys (then 503, nothing recorded), as many
// rejections listed (further ones only counted), keys of at most 1024
// bytes, and effect bodies as the server limits them.
#pragma once

#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kairos::fencing_sink {

struct Answer {
  int status = 200;
  std::string body;
  bool replayed = false;  // a duplicate answered with the first result
};

class FencingLedger {
 public:
  explicit FencingLedger(std::size_t max_keys = 100'000) : max_keys_(max_keys) {}

  // One request: the header values as received (empty when absent) and the
  // body. `changed` tells the caller whether the state moved (to persist it).
  Answer handle(std::string_view key, std::string_view token, std::string_view body, bool* changed);

  // {"keys": {KEY: {"highest_token": N, "first_token": N, "first_status": S,
  //   "first_answer": "...", "duplicates": N, "rejected": N}},
  //  "effects": [{"key": K, "token": N, "body": "..."}],
  //  "rejected": [{"key": K, "token": N, "highest_token": N}]}
  boost::json::value to_json() const;

 private:
  struct Entry {
    std::uint64_t highest_token = 0;
    std::uint64_t first_token = 0;
    Answer first;
    std::uint64_t duplicates = 0;
    std::uint64_t rejected = 0;
  };
  struct Effect {
    std::string key;
    std::uint64_t token = 0;
    std::string body;
  };
  struct Rejection {
    std::string key;
    std::uint64_t token = 0;
    std::uint64_t highest = 0;
  };
  std::size_t max_keys_;
  std::map<std::string, Entry, std::less<>> keys_;
  std::vector<Effect> effects_;
  std::vector<Rejection> rejected_;
};

// Parses a fencing token: 1 to 20 decimal digits that fit 64 bits.
bool parse_token(std::string_view text, std::uint64_t* out);

}  // namespace kairos::fencing_sink
