"""Receives every message of channel NAME until its senders are gone and
checks they are numbered 0, 1, 2, ...

    python receiver.py NAME
"""

import sys
import time

import corecast


def open_when_created(name):
    while True:
        try:
            return corecast.Channel.open(name)
        except corecast.NotFound:
            time.sleep(0.01)


with open_when_created(sys.argv[1]) as ch, ch.receiver() as rx:
    n = 0
    for msg in rx:  # ends when every sender is gone and all was read
        assert msg == f"message {n}".encode(), msg
        n += 1
print(f"received {n}")
