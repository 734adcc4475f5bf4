"""corecast: zero-copy one-to-many message passing between processes on one
machine, robust to crashed and hostile peers.

    ch = corecast.Channel.create("prices", max_message=64)
    tx, rx = ch.sender(), ch.receiver()
    tx.send(b"hello")
    assert rx.recv() == b"hello"

Every error is a subclass of ``corecast.Error`` (``WouldBlock``, ``Timeout``,
``AllSendersGone``, ``Evicted``, ``KeeperGone``, ``ReceiversLate``, ``Gap``,
``Corrupt``, ...), with the same sentence as the Rust library's.
"""

from ._corecast import *  # noqa: F401,F403
from ._corecast import __version__  # noqa: F401
