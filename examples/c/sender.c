/* Fan-out sender: creates (or opens) a channel, waits until RECEIVERS
 * receivers are attached, then sends COUNT messages of up to MAX_LEN bytes,
 * alternating a copy send (corecast_sender_send) and a zero-copy loan
 * (corecast_sender_loan + corecast_sender_commit).
 *
 *   sender CHANNEL COUNT MAX_LEN RECEIVERS
 *
 * Build: cc -O2 sender.c $(pkg-config --cflags --libs corecast) -o sender */
#include <corecast.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pattern.h"

static int fail(const char *what, corecast_status rc) {
  fprintf(stderr, "sender: %s: %s (%s)\n", what, corecast_status_name(rc), corecast_last_error_message());
  return 1;
}

static corecast_status live_receivers(corecast_channel_t *chan, size_t *live) {
  corecast_inspection_t *snap = NULL;
  corecast_status rc = corecast_inspection_create(chan, &snap);
  if (rc != CORECAST_OK) return rc;
  size_t count = 0;
  *live = 0;
  corecast_inspection_member_count(snap, &count);
  for (size_t k = 0; k < count; k++) {
    int is_sender = 0, state = 0;
    corecast_inspection_member(snap, k, &is_sender, NULL, NULL, &state);
    if (!is_sender && state == CORECAST_MEMBER_LIVE) (*live)++;
  }
  return corecast_inspection_close(snap);
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s CHANNEL COUNT MAX_LEN RECEIVERS\n", argv[0]);
    return 2;
  }
  const char *name = argv[1];
  uint64_t count = strtoull(argv[2], NULL, 10);
  size_t max_len = strtoull(argv[3], NULL, 10);
  size_t receivers = strtoull(argv[4], NULL, 10);
  if (max_len < 8) max_len = 8;

  corecast_config_t *config = NULL;
  corecast_status rc = corecast_config_create(&config);
  if (rc != CORECAST_OK) return fail("config", rc);
  corecast_config_set_slots(config, 64);
  corecast_config_set_max_message_bytes(config, (uint32_t)max_len);
  corecast_config_set_max_receivers(config, (uint32_t)(receivers > 0 ? receivers + 4 : 4));
  corecast_config_set_deadline_ns(config, 0); /* a slow receiver only slows us */

  corecast_channel_t *chan = NULL;
  rc = corecast_channel_create(name, config, &chan);
  if (rc == CORECAST_ALREADY_EXISTS) rc = corecast_channel_open(name, &chan);
  corecast_config_close(config);
  if (rc != CORECAST_OK) return fail("create", rc);

  /* Messages go to the receivers attached when they are sent: wait for all. */
  size_t live = 0;
  for (int tries = 0; live < receivers; tries++) {
    if ((rc = live_receivers(chan, &live)) != CORECAST_OK) return fail("inspect", rc);
    if (tries > 30000) {
      fprintf(stderr, "sender: only %zu of %zu receivers attached within 30 s\n", live, receivers);
      return 1;
    }
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }

  corecast_sender_t *tx = NULL;
  if ((rc = corecast_sender_open(chan, &tx)) != CORECAST_OK) return fail("attach sender", rc);
  printf("sending %llu\n", (unsigned long long)count);
  fflush(stdout);

  uint8_t *buf = malloc(max_len);
  for (uint64_t i = 0; i < count; i++) {
    size_t len = pattern_len(i, max_len);
    if (i % 2 == 0) {
      pattern_fill(i, buf, len);
      rc = corecast_sender_send(tx, buf, len);
      if (rc != CORECAST_OK) return fail("send", rc);
    } else {
      void *slot = NULL;
      size_t capacity = 0;
      rc = corecast_sender_loan(tx, len, &slot, &capacity, NULL);
      if (rc != CORECAST_OK) return fail("loan", rc);
      pattern_fill(i, slot, len);
      rc = corecast_sender_commit(tx, len);
      if (rc != CORECAST_OK) return fail("commit", rc);
    }
  }
  free(buf);
  printf("sent %llu\n", (unsigned long long)count);
  /* Closing the sender tells the receivers: once they have read everything
   * they get CORECAST_ALL_SENDERS_GONE. */
  corecast_sender_close(tx);
  corecast_channel_close(chan);
  return 0;
}
