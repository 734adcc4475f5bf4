"""The examples in examples/python run and do what they say."""

import os
import subprocess
import sys

from conftest import GUARD

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python")


def run(script, *args):
    return subprocess.Popen([sys.executable, os.path.join(EXAMPLES, script), *args], stdout=subprocess.PIPE, text=True)


def test_sender_with_a_receiver_and_an_asyncio_receiver(name):
    receivers = [run("receiver.py", name), run("asyncio_receiver.py", name)]
    sender = run("sender.py", name, "20000", "2")
    assert sender.communicate(timeout=GUARD)[0].strip() == "sent 20000"
    for r in receivers:
        assert r.communicate(timeout=GUARD)[0].strip() == "received 20000"
    assert sender.returncode == 0 and all(r.returncode == 0 for r in receivers)


def test_numpy_frames():
    p = run("numpy_frames.py", "50")
    out = p.communicate(timeout=GUARD)[0]
    assert p.returncode == 0 and out.startswith("checked 50 frames"), out
