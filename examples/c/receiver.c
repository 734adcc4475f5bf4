/* Fan-out receiver: opens a channel (waiting up to 30 s for it to exist),
 * attaches, and checks every message until all senders are gone. Messages
 * are read in place (corecast_receiver_borrow, zero copy) or, with --copy,
 * copied out (corecast_receiver_recv).
 *
 *   receiver CHANNEL MAX_LEN [--copy]
 *
 * Prints "ready" once attached, "progress N" after every 1000 messages and
 * "done N" at the end; exits 1 on the first message that is not the one
 * expected. */
#include <corecast.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pattern.h"

static int fail(const char *what, corecast_status rc) {
  fprintf(stderr, "receiver: %s: %s (%s)\n", what, corecast_status_name(rc), corecast_last_error_message());
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s CHANNEL MAX_LEN [--copy]\n", argv[0]);
    return 2;
  }
  size_t max_len = strtoull(argv[2], NULL, 10);
  int copy = argc > 3 && strcmp(argv[3], "--copy") == 0;
  if (max_len < 8) max_len = 8;

  corecast_channel_t *chan = NULL;
  corecast_status rc;
  for (int tries = 0; (rc = corecast_channel_open(argv[1], &chan)) == CORECAST_NOT_FOUND && tries < 30000; tries++)
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  if (rc != CORECAST_OK) return fail("open", rc);
  corecast_receiver_t *rx = NULL;
  if ((rc = corecast_receiver_open(chan, &rx)) != CORECAST_OK) return fail("attach receiver", rc);
  corecast_channel_close(chan);
  printf("ready\n");
  fflush(stdout);

  uint8_t *buf = malloc(max_len);
  uint64_t got = 0;
  for (;;) {
    const uint8_t *data = NULL;
    size_t len = 0;
    if (copy) {
      rc = corecast_receiver_recv(rx, buf, max_len, &len);
      data = buf;
    } else {
      rc = corecast_receiver_borrow(rx, (const void **)&data, &len);
    }
    if (rc == CORECAST_ALL_SENDERS_GONE) break;
    if (rc != CORECAST_OK) return fail("receive", rc);
    if (!pattern_check(got, data, len, max_len)) {
      fprintf(stderr, "receiver: message %llu (%zu bytes) is not the one expected\n", (unsigned long long)got, len);
      return 1;
    }
    if (!copy && (rc = corecast_receiver_release(rx)) != CORECAST_OK) return fail("release", rc);
    got++;
    if (got % 1000 == 0) {
      printf("progress %llu\n", (unsigned long long)got);
      fflush(stdout);
    }
  }
  printf("done %llu\n", (unsigned long long)got);
  free(buf);
  corecast_receiver_close(rx);
  return 0;
}
