"""Shared helpers: unique channel names, the checked message pattern (the
same as corecast/examples/stream.rs), and peer processes."""

import itertools
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "peer.py")
GUARD = 120  # seconds: a hang guard only

_names = itertools.count()


@pytest.fixture
def name(request):
    """A channel name unique to this test run and test."""
    return f"py-{os.getpid()}-{next(_names)}-{request.node.name[:24]}"


def message(i, n):
    """Message `i` of `n` bytes: i (8 bytes LE), then (i*31 + j*7 + 1) % 256."""
    body = bytes(((i * 31 + j * 7 + 1) & 0xFF) for j in range(n))
    head = i.to_bytes(8, "little")[: min(n, 8)]
    return head + body[len(head):]


def peer(*args):
    """A Python peer process (tests/peer.py) with a line-buffered stdout."""
    return subprocess.Popen(
        [sys.executable, PEER, *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def expect_line(proc, want):
    line = proc.stdout.readline().strip()
    assert line == want, f"peer said {line!r}, expected {want!r}; stderr: {proc.stderr.read()}"


def finish(proc):
    out, err = proc.communicate(timeout=GUARD)
    assert proc.returncode == 0, f"peer failed ({proc.returncode}): {out}\n{err}"
    return out
