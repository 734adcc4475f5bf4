// The header compiles as C++ and the API behaves as documented, from C++:
// copy and zero-copy round trips, and the statuses of misuse.
#include <corecast.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#define CHECK(cond)                                                                   \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::fprintf(stderr, "check failed at line %d: %s (last error: %s)\n", __LINE__, \
                   #cond, corecast_last_error_message());                            \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  const std::string name = argv[1];

  corecast_config_t *config = nullptr;
  CHECK(corecast_config_create(&config) == CORECAST_OK);
  CHECK(corecast_config_set_slots(config, 8) == CORECAST_OK);
  CHECK(corecast_config_set_max_message_bytes(config, 64) == CORECAST_OK);
  uint32_t slots = 0;
  CHECK(corecast_config_slots(config, &slots) == CORECAST_OK && slots == 8);

  // Bad input gets a status, never a crash.
  corecast_channel_t *chan = nullptr;
  CHECK(corecast_channel_create("no/slash", config, &chan) == CORECAST_INVALID_NAME);
  CHECK(corecast_channel_create(nullptr, config, &chan) == CORECAST_INVALID_ARGUMENT);
  CHECK(corecast_channel_create(name.c_str(), config, nullptr) == CORECAST_INVALID_ARGUMENT);
  CHECK(corecast_config_set_slots(config, 3) == CORECAST_OK);
  CHECK(corecast_channel_create(name.c_str(), config, &chan) == CORECAST_INVALID_CONFIG);
  CHECK(std::strstr(corecast_last_error_message(), "slots") != nullptr);
  CHECK(corecast_config_set_slots(config, 8) == CORECAST_OK);

  CHECK(corecast_channel_create(name.c_str(), config, &chan) == CORECAST_OK);
  CHECK(corecast_config_close(config) == CORECAST_OK);
  CHECK(corecast_config_close(config) == CORECAST_CLOSED);
  CHECK(corecast_config_slots(config, &slots) == CORECAST_CLOSED);
  CHECK(corecast_channel_create(name.c_str(), nullptr, &chan) != CORECAST_OK);

  corecast_receiver_t *rx = nullptr;
  corecast_sender_t *tx = nullptr;
  CHECK(corecast_receiver_open(chan, &rx) == CORECAST_OK);
  CHECK(corecast_sender_open(chan, &tx) == CORECAST_OK);

  char buf[64];
  size_t len = 0;
  CHECK(corecast_receiver_try_recv(rx, buf, sizeof buf, &len) == CORECAST_WOULD_BLOCK);
  CHECK(corecast_receiver_recv_timeout(rx, buf, sizeof buf, &len, 1000000) == CORECAST_TIMEOUT);

  // Copy send, copy receive.
  CHECK(corecast_sender_send(tx, "hello", 5) == CORECAST_OK);
  CHECK(corecast_receiver_recv(rx, buf, 2, &len) == CORECAST_BUFFER_TOO_SMALL && len == 5);
  CHECK(corecast_receiver_recv(rx, buf, sizeof buf, &len) == CORECAST_OK);
  CHECK(len == 5 && std::memcmp(buf, "hello", 5) == 0);

  // Zero copy both ways.
  void *slot = nullptr;
  size_t capacity = 0;
  uint64_t seq = 0;
  CHECK(corecast_sender_commit(tx, 1) == CORECAST_INVALID_STATE);
  CHECK(corecast_sender_loan(tx, 65, &slot, &capacity, &seq) == CORECAST_TOO_LARGE);
  CHECK(corecast_sender_loan(tx, 64, &slot, &capacity, &seq) == CORECAST_OK);
  CHECK(capacity == 64 && seq == 1);
  CHECK(corecast_sender_send(tx, "x", 1) == CORECAST_INVALID_STATE);  // loan outstanding
  std::memcpy(slot, "in place", 8);
  CHECK(corecast_sender_commit(tx, 8) == CORECAST_OK);
  const void *data = nullptr;
  CHECK(corecast_receiver_borrow(rx, &data, &len) == CORECAST_OK);
  CHECK(len == 8 && std::memcmp(data, "in place", 8) == 0);
  uint64_t got_seq = 0;
  uint32_t from = 9;
  CHECK(corecast_receiver_borrowed(rx, &got_seq, &from) == CORECAST_OK && got_seq == 1 && from == 0);
  CHECK(corecast_receiver_try_recv(rx, buf, sizeof buf, &len) == CORECAST_INVALID_STATE);
  CHECK(corecast_receiver_verify(rx) == CORECAST_OK);
  CHECK(corecast_receiver_release(rx) == CORECAST_OK);
  CHECK(corecast_receiver_release(rx) == CORECAST_INVALID_STATE);

  // An aborted loan is a void every receiver skips.
  CHECK(corecast_sender_try_loan(tx, 8, &slot, nullptr, nullptr) == CORECAST_OK);
  CHECK(corecast_sender_abort(tx) == CORECAST_OK);
  CHECK(corecast_sender_send(tx, "after", 5) == CORECAST_OK);
  CHECK(corecast_receiver_recv(rx, buf, sizeof buf, &len) == CORECAST_OK && len == 5);
  CHECK(std::memcmp(buf, "after", 5) == 0);

  char big[65] = {0};
  CHECK(corecast_sender_send(tx, big, sizeof big) == CORECAST_TOO_LARGE);
  CHECK(corecast_sender_send(tx, nullptr, 3) == CORECAST_INVALID_ARGUMENT);
  CHECK(corecast_sender_set_wait(tx, 7, 0, 0) == CORECAST_INVALID_ARGUMENT);
  CHECK(corecast_sender_set_wait(tx, CORECAST_WAIT_SPIN, 0, 0) == CORECAST_OK);
  // Napping endpoints: a wait that finds nothing times out, and a message
  // sent meanwhile is found after a nap.
  CHECK(corecast_sender_set_wait_nap(tx, 0, 0, 100000) == CORECAST_OK);
  CHECK(corecast_receiver_set_wait_nap(rx, 0, 0, 100000) == CORECAST_OK);
  CHECK(corecast_receiver_recv_timeout(rx, buf, sizeof buf, &len, 2000000) == CORECAST_TIMEOUT);
  CHECK(corecast_sender_send(tx, "nap", 3) == CORECAST_OK);
  CHECK(corecast_receiver_recv_timeout(rx, buf, sizeof buf, &len, 2000000000) == CORECAST_OK && len == 3);
  CHECK(std::memcmp(buf, "nap", 3) == 0);
  CHECK(corecast_receiver_set_wait_nap(nullptr, 0, 0, 1) == CORECAST_INVALID_ARGUMENT);

  int fd = -1;
  CHECK(corecast_receiver_wake_fd(rx, &fd) == CORECAST_OK && fd >= 0);

  // Inspection: one live sender, one live receiver at cursor 5.
  corecast_inspection_t *snap = nullptr;
  CHECK(corecast_inspection_create(chan, &snap) == CORECAST_OK);
  size_t members = 0;
  CHECK(corecast_inspection_member_count(snap, &members) == CORECAST_OK && members == 2);
  uint64_t sent = 0;
  CHECK(corecast_inspection_summary(snap, &sent, nullptr, nullptr, nullptr) == CORECAST_OK && sent == 5);
  for (size_t k = 0; k < members; k++) {
    int is_sender = -1, state = -1;
    uint64_t cursor = 0;
    CHECK(corecast_inspection_member(snap, k, &is_sender, nullptr, nullptr, &state) == CORECAST_OK);
    CHECK(state == CORECAST_MEMBER_LIVE);
    CHECK(corecast_inspection_member_progress(snap, k, &cursor, nullptr, nullptr, nullptr) == CORECAST_OK);
    CHECK(is_sender ? cursor == UINT64_MAX : cursor == 5);
  }
  CHECK(corecast_inspection_member(snap, members, nullptr, nullptr, nullptr, nullptr) == CORECAST_INVALID_ARGUMENT);
  CHECK(corecast_inspection_close(snap) == CORECAST_OK);

  CHECK(corecast_sender_close(tx) == CORECAST_OK);
  CHECK(corecast_sender_send(tx, "x", 1) == CORECAST_CLOSED);
  CHECK(corecast_receiver_recv(rx, buf, sizeof buf, &len) == CORECAST_ALL_SENDERS_GONE);
  CHECK(corecast_channel_destroy(chan) == CORECAST_OK);
  CHECK(corecast_channel_close(chan) == CORECAST_CLOSED);
  CHECK(corecast_receiver_close(rx) == CORECAST_OK);
  CHECK(corecast_receiver_close(nullptr) == CORECAST_OK);
  CHECK(std::strcmp(corecast_status_name(CORECAST_TIMEOUT), "CORECAST_TIMEOUT") == 0);
  std::printf("ok\n");
  return 0;
}
