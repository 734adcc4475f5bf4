"""Objects made before an `os.fork` are refused in the child with `Forked`
(the library's memory does not follow a fork), and the child's finalizers
touch nothing shared: it exits cleanly, and the parent's endpoints go on."""

import os
import subprocess
import sys
import textwrap

import corecast
from conftest import GUARD

CHILD = textwrap.dedent(
    """
    import os, sys
    import corecast

    ch = corecast.Channel.create(sys.argv[1], max_message=64)
    tx, rx = ch.sender(), ch.receiver()
    tx.send(b"AAAA")
    held = rx.recv_in_place()
    loan = tx.loan(16)
    pid = os.fork()
    if pid == 0:
        refused = []
        for what, call in [
            ("send", lambda: tx.send(b"x")),
            ("recv", lambda: rx.try_recv()),
            ("inspect", lambda: ch.inspect()),
            ("sender", lambda: ch.sender()),
            ("held", lambda: bytes(held)),
            ("release", lambda: held.release()),
            ("loan", lambda: loan.commit(4)),
            ("view", lambda: loan.view),
        ]:
            try:
                call()
            except corecast.Forked:
                refused.append(what)
        print(" ".join(refused), flush=True)
        # A normal exit: every finalizer runs, with a message and a loan held.
        sys.exit(0)
    _, status = os.waitpid(pid, 0)
    loan.abort()
    assert bytes(held) == b"AAAA"
    held.release()
    tx.send(b"BBBB")
    assert rx.recv(timeout=10) == b"BBBB"
    print("child", status, flush=True)
    """
)


def test_objects_made_before_a_fork_are_refused_in_the_child_which_exits_cleanly(name):
    out = subprocess.run(
        [sys.executable, "-c", CHILD, name], capture_output=True, text=True, timeout=GUARD, check=False
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")
    assert lines[0] == "send recv inspect sender held release loan view", out.stdout
    assert lines[1] == "child 0", f"the child must exit 0, not die of a signal: {out.stdout} {out.stderr}"
