#include "tests/conformance/transport_conformance.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kairos::transport_test {
namespace {

struct Received {
  PeerId from;
  std::string message;
  friend bool operator==(const Received&, const Received&) = default;
  friend bool operator<(const Received& a, const Received& b) {
    return a.from != b.from ? a.from < b.from : a.message < b.message;
  }
};

// Installs a handler on `peer` that records what arrives.
void record_into(TransportHarness& h, PeerId peer, std::vector<Received>* out) {
  h.transport(peer).set_handler([out](PeerId from, std::string_view message) {
    out->push_back({from, std::string(message)});
  });
}

std::string describe(const std::vector<Received>& v) {
  std::string s = "[";
  for (const auto& r : v) {
    absl::StrAppend(&s, s.size() > 1 ? ", " : "", r.from, ":");
    if (r.message.size() <= 16) {
      absl::StrAppend(&s, "'", r.message, "'");
    } else {
      absl::StrAppend(&s, r.message.size(), " bytes");
    }
  }
  return s + "]";
}

std::string expect_received(const std::string& who, const std::vector<Received>& got,
                            const std::vector<Received>& want) {
  if (got == want) return "";
  return absl::StrCat(who, " received ", describe(got), ", expected ", describe(want));
}

}  // namespace

std::string check_delivery_to_the_right_peer(TransportHarness& h) {
  const PeerId a = h.add_peer(), b = h.add_peer(), c = h.add_peer();
  std::vector<Received> at_a, at_b, at_c;
  record_into(h, a, &at_a);
  record_into(h, b, &at_b);
  record_into(h, c, &at_c);
  h.transport(a).send(b, "a-to-b");
  h.transport(a).send(c, "a-to-c");
  h.transport(b).send(a, "b-to-a");
  h.transport(c).send(b, "c-to-b");
  if (!at_a.empty() || !at_b.empty() || !at_c.empty())
    return "a message was delivered inside send()";
  h.run();
  std::sort(at_b.begin(), at_b.end());
  if (auto v = expect_received("a", at_a, {{b, "b-to-a"}}); !v.empty()) return v;
  std::vector<Received> want_b = {{a, "a-to-b"}, {c, "c-to-b"}};
  std::sort(want_b.begin(), want_b.end());
  if (auto v = expect_received("b", at_b, want_b); !v.empty()) return v;
  return expect_received("c", at_c, {{a, "a-to-c"}});
}

std::string check_reply_from_a_handler(TransportHarness& h) {
  const PeerId client = h.add_peer(), server = h.add_peer();
  std::vector<Received> at_client;
  record_into(h, client, &at_client);
  Transport& st = h.transport(server);
  int served = 0;
  st.set_handler([&st, &served](PeerId from, std::string_view message) {
    ++served;
    st.send(from, absl::StrCat("re:", std::string(message)));
  });
  for (int i = 0; i < 3; ++i) h.transport(client).send(server, absl::StrCat("q", i));
  h.run();
  if (served != 3) return absl::StrCat("the server's handler ran ", served, " times, expected 3");
  std::vector<Received> want = {{server, "re:q0"}, {server, "re:q1"}, {server, "re:q2"}};
  if (!h.ordered()) std::sort(at_client.begin(), at_client.end());
  return expect_received("client", at_client, want);
}

std::string check_per_peer_order(TransportHarness& h) {
  const PeerId a = h.add_peer(), b = h.add_peer(), c = h.add_peer();
  std::vector<Received> at_b;
  record_into(h, b, &at_b);
  std::vector<Received> want;
  for (int i = 0; i < 200; ++i) {
    // Interleaved with another sender, whose order is judged separately.
    const PeerId from = i % 3 == 0 ? c : a;
    const std::string m = absl::StrCat(1000 + i);
    h.transport(from).send(b, m);
    want.push_back({from, m});
  }
  h.run();
  if (h.ordered()) {
    for (PeerId from : {a, c}) {
      std::vector<Received> got_from, want_from;
      for (const auto& r : at_b)
        if (r.from == from) got_from.push_back(r);
      for (const auto& r : want)
        if (r.from == from) want_from.push_back(r);
      if (got_from != want_from)
        return absl::StrCat("messages from peer ", from,
                            " arrived out of send order: ", describe(got_from));
    }
  }
  std::sort(at_b.begin(), at_b.end());
  std::sort(want.begin(), want.end());
  if (at_b != want)
    return absl::StrCat(at_b.size(), " messages arrived, expected each of ", want.size(),
                        " exactly once");
  return "";
}

std::string check_messages_arrive_intact(TransportHarness& h) {
  const PeerId a = h.add_peer(), b = h.add_peer();
  std::vector<Received> at_b;
  record_into(h, b, &at_b);
  std::vector<std::string> sent = {
      std::string(),
      std::string("\0", 1),
      std::string("a\0b\xff\x00\x01", 6),
      std::string(4096, '\xff'),
  };
  std::string biggest(kMaxMessageSize, 'x');
  for (std::size_t i = 0; i < biggest.size(); i += 4093) biggest[i] = static_cast<char>(i % 251);
  sent.push_back(biggest);
  for (const auto& m : sent) h.transport(a).send(b, m);
  h.run();
  std::vector<Received> want;
  for (const auto& m : sent) want.push_back({a, m});
  if (!h.ordered()) {
    std::sort(at_b.begin(), at_b.end());
    std::sort(want.begin(), want.end());
  }
  return expect_received("b", at_b, want);
}

std::string check_send_to_unknown_peer(TransportHarness& h) {
  const PeerId a = h.add_peer(), b = h.add_peer();
  std::vector<Received> at_a, at_b;
  record_into(h, a, &at_a);
  record_into(h, b, &at_b);
  const PeerId nobody = h.unknown_peer();
  if (nobody == a || nobody == b) return "unknown_peer() named a live peer";
  h.transport(a).send(nobody, "lost");
  h.transport(a).send(b, "kept");
  h.transport(a).send(nobody, "lost too");
  h.run();
  if (!at_a.empty()) return absl::StrCat("the sender received ", describe(at_a));
  return expect_received("b", at_b, {{a, "kept"}});
}

std::string check_peer_appears_and_disappears(TransportHarness& h) {
  const PeerId a = h.add_peer(), b = h.add_peer(), c = h.add_peer();
  std::vector<Received> at_a, at_b, at_c;
  record_into(h, a, &at_a);
  record_into(h, b, &at_b);
  record_into(h, c, &at_c);
  h.transport(a).send(b, "in flight");
  h.transport(a).send(c, "to c");
  h.remove_peer(b);
  h.transport(a).send(b, "after removal");
  h.run();
  if (!at_b.empty()) return absl::StrCat("a removed peer received ", describe(at_b));
  if (auto v = expect_received("c", at_c, {{a, "to c"}}); !v.empty()) return v;
  // A newcomer: known to `a` only through its first message.
  const PeerId d = h.add_peer();
  if (d == a || d == b || d == c) return absl::StrCat("a new peer got the used id ", d);
  Transport& dt = h.transport(d);
  h.transport(a).set_handler([&h, a](PeerId from, std::string_view message) {
    if (message == "hello") h.transport(a).send(from, "welcome");
  });
  std::vector<Received> at_d;
  record_into(h, d, &at_d);
  dt.send(a, "hello");
  h.run();
  return expect_received("the new peer", at_d, {{a, "welcome"}});
}

std::string check_handler_at_arrival(TransportHarness& h) {
  const PeerId a = h.add_peer(), b = h.add_peer();
  h.transport(a).send(b, "before any handler");
  h.run();
  std::vector<Received> first, second;
  record_into(h, b, &first);
  h.run();
  if (!first.empty())
    return absl::StrCat("a message was buffered for a handler: ", describe(first));
  h.transport(a).send(b, "sent under the first handler");
  record_into(h, b, &second);  // replaced before the message arrives
  h.run();
  if (!first.empty()) return "a message went to the handler installed when it was sent";
  if (auto v = expect_received("the second handler", second, {{a, "sent under the first handler"}});
      !v.empty())
    return v;
  h.transport(b).set_handler(nullptr);
  h.transport(a).send(b, "to nobody");
  h.run();
  record_into(h, b, &second);
  h.run();
  if (second.size() != 1) return "a message sent while no handler was installed was delivered";
  return "";
}

std::string check_handler_replaces_itself(TransportHarness& h) {
  const PeerId a = h.add_peer(), b = h.add_peer();
  std::vector<std::string> log;
  Transport& bt = h.transport(b);
  std::vector<Received> later;
  // The running handler owns a token; if the adapter destroys the running
  // handler when it is replaced, the token dies before the call returns.
  auto token = std::make_shared<int>(0);
  const std::weak_ptr<int> watch = token;
  bool destroyed_while_running = false;
  bt.set_handler([&bt, &log, &later, &watch, &destroyed_while_running, token = std::move(token)](
                     PeerId, std::string_view message) {
    bt.set_handler([&later](PeerId from, std::string_view m) {
      later.push_back({from, std::string(m)});
    });
    if (watch.expired()) destroyed_while_running = true;
    log.push_back(std::string(message));
  });
  h.transport(a).send(b, "first");
  h.run();
  if (destroyed_while_running) return "replacing the handler destroyed the running one";
  if (!watch.expired()) return "the replaced handler was never released";
  h.transport(a).send(b, "second");
  h.run();
  if (log != std::vector<std::string>{"first"})
    return absl::StrCat("the first handler ran ", log.size(), " times");
  return expect_received("the replacement handler", later, {{a, "second"}});
}

std::string check_remove_from_a_handler(TransportHarness& h) {
  const PeerId a = h.add_peer(), b = h.add_peer(), c = h.add_peer();
  std::vector<Received> at_c;
  record_into(h, c, &at_c);
  int calls = 0;
  h.transport(b).set_handler([&h, &calls, b, c](PeerId from, std::string_view) {
    ++calls;
    h.transport(b).send(c, "last words");  // sent before it goes away
    h.remove_peer(b);
    (void)from;
  });
  h.transport(a).send(b, "goodbye");
  h.run();
  h.transport(a).send(b, "too late");
  h.run();
  if (calls != 1) return absl::StrCat("the removed peer's handler ran ", calls, " times");
  return expect_received("c", at_c, {{b, "last words"}});
}

}  // namespace kairos::transport_test
