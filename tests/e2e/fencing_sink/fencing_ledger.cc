#include "tests/e2e/fencing_sink/fencing_ledger.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <charconv>

namespace kairos::fencing_sink {

namespace json = boost::json;

namespace {

std::string error_body(std::string_view message) {
  json::object o;
  o["error"] = json::string(message);
  return json::serialize(o);
}

}  // namespace

bool parse_token(std::string_view text, std::uint64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  for (char c : text)
    if (c < '0' || c > '9') return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

Answer FencingLedger::handle(std::string_view key, std::string_view token_text,
                             std::string_view body, bool* changed) {
  *changed = false;
  if (key.empty()) return Answer{400, error_body("missing Idempotency-Key")};
  if (key.size() > 1024) return Answer{400, error_body("Idempotency-Key longer than 1024 bytes")};
  std::uint64_t token = 0;
  if (!parse_token(token_text, &token))
    return Answer{400, error_body("missing or malformed Kairos-Fencing-Token")};

  auto it = keys_.find(key);
  if (it == keys_.end()) {
    if (keys_.size() >= max_keys_) return Answer{503, error_body("sink full")};
    Entry e;
    e.highest_token = token;
    e.first_token = token;
    json::object o;
    o["applied"] = true;
    o["key"] = json::string(key);
    o["token"] = token;
    o["effect"] = effects_.size() + 1;
    e.first = Answer{200, json::serialize(o)};
    effects_.push_back(Effect{std::string(key), token, std::string(body)});
    it = keys_.emplace(std::string(key), std::move(e)).first;
    *changed = true;
    return it->second.first;
  }
  Entry& e = it->second;
  *changed = true;
  if (token < e.highest_token) {
    ++e.rejected;
    if (rejected_.size() < max_keys_)
      rejected_.push_back(Rejection{std::string(key), token, e.highest_token});
    return Answer{409, error_body("stale fencing token " + std::to_string(token) +
                                  " (highest seen " + std::to_string(e.highest_token) + ")")};
  }
  e.highest_token = token;
  ++e.duplicates;
  Answer a = e.first;
  a.replayed = true;
  return a;
}

json::value FencingLedger::to_json() const {
  json::object keys;
  for (const auto& [key, e] : keys_) {
    json::object o;
    o["highest_token"] = e.highest_token;
    o["first_token"] = e.first_token;
    o["first_status"] = e.first.status;
    o["first_answer"] = json::string(e.first.body);
    o["duplicates"] = e.duplicates;
    o["rejected"] = e.rejected;
    keys[key] = std::move(o);
  }
  json::array effects;
  for (const auto& x : effects_)
    effects.push_back(json::object{{"key", x.key}, {"token", x.token}, {"body", x.body}});
  json::array rejected;
  for (const auto& x : rejected_)
    rejected.push_back(
        json::object{{"key", x.key}, {"token", x.token}, {"highest_token", x.highest}});
  return json::object{{"keys", std::move(keys)},
                      {"effects", std::move(effects)},
                      {"rejected", std::move(rejected)}};
}

}  // namespace kairos::fencing_sink
