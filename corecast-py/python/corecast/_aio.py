"""asyncio over a receiver's wake descriptor: ``await rx.arecv()`` and
``async for msg in rx``. Cancelling a wait consumes nothing."""

import asyncio

from ._corecast import AllSendersGone, WouldBlock


async def arecv(rx):
    """The next message as bytes, waiting on the running loop."""
    loop = asyncio.get_running_loop()
    fd = rx.fileno()
    while True:
        try:
            return rx.try_recv()
        except WouldBlock:
            pass
        ready = loop.create_future()

        def wake():
            if not ready.done():
                ready.set_result(None)

        loop.add_reader(fd, wake)
        try:
            await ready
        finally:
            loop.remove_reader(fd)


async def anext(rx):
    """``__anext__``: the next message, or ``StopAsyncIteration`` once every
    sender is gone and everything was received."""
    try:
        return await arecv(rx)
    except AllSendersGone:
        raise StopAsyncIteration from None
