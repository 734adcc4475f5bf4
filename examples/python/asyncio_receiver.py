"""The receiver of receiver.py, in an asyncio program: the event loop waits
on the receiver's file descriptor, other tasks run meanwhile.

    python asyncio_receiver.py NAME
"""

import asyncio
import sys

import corecast


async def ticker(stop):
    ticks = 0
    while not stop.is_set():
        ticks += 1
        await asyncio.sleep(0.01)
    return ticks


async def main(name):
    while True:
        try:
            ch = corecast.Channel.open(name)
            break
        except corecast.NotFound:
            await asyncio.sleep(0.01)
    rx = ch.receiver()
    stop = asyncio.Event()
    other = asyncio.create_task(ticker(stop))
    n = 0
    async for msg in rx:
        assert msg == f"message {n}".encode(), msg
        n += 1
    stop.set()
    await other
    print(f"received {n}")


asyncio.run(main(sys.argv[1]))
