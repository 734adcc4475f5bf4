/* The payload every example sends and checks: message i is len(i) bytes
 * long, starts with i (8 bytes, little-endian) and goes on with bytes that
 * depend on i and their position, so a lost, repeated, reordered or torn
 * message is caught. */
#ifndef CORECAST_EXAMPLE_PATTERN_H
#define CORECAST_EXAMPLE_PATTERN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline size_t pattern_len(uint64_t i, size_t max_len) {
  if (max_len <= 8) return 8;
  return 8 + (size_t)((i * 7919u) % (uint64_t)(max_len - 8 + 1));
}

static inline uint8_t pattern_byte(uint64_t i, size_t j) {
  return (uint8_t)(i * 31u + j * 7u + 1u);
}

static inline void pattern_fill(uint64_t i, uint8_t *buf, size_t len) {
  for (size_t j = 0; j < 8 && j < len; j++) buf[j] = (uint8_t)(i >> (8 * j));
  for (size_t j = 8; j < len; j++) buf[j] = pattern_byte(i, j);
}

/* 1 when buf holds message i of a stream whose largest message is max_len. */
static inline int pattern_check(uint64_t i, const uint8_t *buf, size_t len, size_t max_len) {
  if (len != pattern_len(i, max_len)) return 0;
  for (size_t j = 0; j < 8; j++)
    if (buf[j] != (uint8_t)(i >> (8 * j))) return 0;
  for (size_t j = 8; j < len; j++)
    if (buf[j] != pattern_byte(i, j)) return 0;
  return 1;
}

#endif
