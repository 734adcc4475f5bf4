"""A peer process for the tests:

    peer.py send NAME COUNT LEN RECEIVERS   wait for RECEIVERS, send COUNT checked messages
    peer.py recv NAME COUNT [inplace]       receive COUNT, check each, then expect AllSendersGone
    peer.py hold NAME                       attach a receiver, say "attached", then sleep
"""

import sys
import time

import corecast
from conftest import message


def open_channel(name):
    give_up = time.monotonic() + 60
    while True:
        try:
            return corecast.Channel.open(name)
        except corecast.NotFound:
            if time.monotonic() > give_up:
                raise
            time.sleep(0.005)


def send(name, count, n, receivers):
    ch = open_channel(name)
    tx = ch.sender()
    give_up = time.monotonic() + 60
    while tx.live_receivers < receivers:
        assert time.monotonic() < give_up, "receivers did not attach"
        time.sleep(0.002)
    print("sending", flush=True)
    for i in range(count):
        tx.send(message(i, n))
    print(f"sent {count}", flush=True)


def recv(name, count, inplace=False):
    ch = open_channel(name)
    rx = ch.receiver()
    print("attached", flush=True)
    for i in range(count):
        if inplace:
            with rx.recv_in_place(timeout=60) as m:
                got = bytes(m.view)
        else:
            got = rx.recv(timeout=60)
        if got != message(i, len(got)):
            print(f"message {i} differs: {got[:16]!r}", flush=True)
            sys.exit(1)
    try:
        rx.recv(timeout=60)
    except corecast.AllSendersGone:
        print(f"ok {count}", flush=True)
        return
    print("a message after the last", flush=True)
    sys.exit(1)


def hold(name):
    ch = open_channel(name)
    _rx = ch.receiver()
    print("attached", flush=True)
    time.sleep(3600)


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "send":
        send(args[0], int(args[1]), int(args[2]), int(args[3]))
    elif cmd == "recv":
        recv(args[0], int(args[1]), len(args) > 2 and args[2] == "inplace")
    elif cmd == "hold":
        hold(args[0])
    else:
        sys.exit(f"unknown command {cmd}")
