/* An event loop over two channels: one epoll set holds both receivers'
 * wake fds; each wake-up drains its channel with corecast_receiver_try_borrow
 * until CORECAST_WOULD_BLOCK (which re-arms the fd). Ends when both
 * channels' senders are gone.
 *
 *   epoll_loop CHANNEL_A CHANNEL_B MAX_LEN
 *
 * Prints "ready" once attached to both, then "A n" and "B n" (messages
 * checked on each). */
#include <corecast.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>

#include "pattern.h"

static int fail(const char *what, corecast_status rc) {
  fprintf(stderr, "epoll_loop: %s: %s (%s)\n", what, corecast_status_name(rc), corecast_last_error_message());
  return 1;
}

struct source {
  const char *label;
  corecast_receiver_t *rx;
  uint64_t got;
  int done;
};

static corecast_status attach(const char *name, struct source *src) {
  corecast_channel_t *chan = NULL;
  corecast_status rc;
  for (int tries = 0; (rc = corecast_channel_open(name, &chan)) == CORECAST_NOT_FOUND && tries < 30000; tries++)
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  if (rc != CORECAST_OK) return rc;
  rc = corecast_receiver_open(chan, &src->rx);
  corecast_channel_close(chan);
  return rc;
}

/* Reads every message ready on src; returns a status (OK when drained). */
static corecast_status drain(struct source *src, size_t max_len) {
  for (;;) {
    const void *data = NULL;
    size_t len = 0;
    corecast_status rc = corecast_receiver_try_borrow(src->rx, &data, &len);
    if (rc == CORECAST_WOULD_BLOCK) return CORECAST_OK;
    if (rc == CORECAST_ALL_SENDERS_GONE) {
      src->done = 1;
      return CORECAST_OK;
    }
    if (rc != CORECAST_OK) return rc;
    if (!pattern_check(src->got, data, len, max_len)) {
      fprintf(stderr, "epoll_loop: %s message %llu is not the one expected\n", src->label, (unsigned long long)src->got);
      exit(1);
    }
    if ((rc = corecast_receiver_release(src->rx)) != CORECAST_OK) return rc;
    src->got++;
  }
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s CHANNEL_A CHANNEL_B MAX_LEN\n", argv[0]);
    return 2;
  }
  size_t max_len = strtoull(argv[3], NULL, 10);
  if (max_len < 8) max_len = 8;
  struct source sources[2] = {{"A", NULL, 0, 0}, {"B", NULL, 0, 0}};
  int ep = epoll_create1(EPOLL_CLOEXEC);
  for (int k = 0; k < 2; k++) {
    int fd = -1;
    corecast_status rc = attach(argv[1 + k], &sources[k]);
    if (rc != CORECAST_OK) return fail("attach", rc);
    if ((rc = corecast_receiver_wake_fd(sources[k].rx, &fd)) != CORECAST_OK) return fail("wake fd", rc);
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)k};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
      perror("epoll_ctl");
      return 1;
    }
  }
  printf("ready\n");
  fflush(stdout);

  while (!sources[0].done || !sources[1].done) {
    struct epoll_event events[2];
    int n = epoll_wait(ep, events, 2, 1000);
    for (int e = 0; e < n; e++) {
      struct source *src = &sources[events[e].data.u32];
      corecast_status rc = drain(src, max_len);
      if (rc != CORECAST_OK) return fail("receive", rc);
      if (src->done) {
        int fd = -1;
        corecast_receiver_wake_fd(src->rx, &fd);
        epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
      }
    }
  }
  printf("A %llu\nB %llu\n", (unsigned long long)sources[0].got, (unsigned long long)sources[1].got);
  corecast_receiver_close(sources[0].rx);
  corecast_receiver_close(sources[1].rx);
  return 0;
}
