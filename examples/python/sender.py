"""Creates channel NAME, waits for RECEIVERS receivers, sends COUNT
numbered messages, then leaves (receivers then see the end of the stream).

    python sender.py NAME COUNT RECEIVERS
"""

import sys
import time

import corecast

name, count, receivers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with corecast.Channel.create(name, slots=256, max_message=64) as ch:
    with ch.sender() as tx:
        while tx.live_receivers < receivers:
            time.sleep(0.001)
        for i in range(count):
            tx.send(f"message {i}".encode())
print(f"sent {count}")
