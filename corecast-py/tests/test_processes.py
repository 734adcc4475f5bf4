"""Real separate processes: fan-out, crashes, stalls, Rust peers."""

import os
import signal
import subprocess
import time

import pytest

import corecast
from conftest import GUARD, expect_line, finish, message, peer

COUNT = 100_000


def test_one_sender_three_receivers_every_byte_in_order(name):
    ch = corecast.Channel.create(name, slots=256, max_message=64)
    receivers = [peer("recv", name, COUNT, "inplace" if k == 0 else "copy") for k in range(3)]
    for r in receivers:
        expect_line(r, "attached")
    sender = peer("send", name, COUNT, 64, 3)
    assert finish(sender).strip().endswith(f"sent {COUNT}")
    for r in receivers:
        assert finish(r).strip() == f"ok {COUNT}"
    del ch


def test_a_killed_sender_leaves_receivers_to_drain_then_all_senders_gone(name):
    ch = corecast.Channel.create(name, slots=64, max_message=64)
    rx = ch.receiver()
    sender = peer("send", name, 10**9, 32, 1)
    expect_line(sender, "sending")
    got = [rx.recv(timeout=GUARD) for _ in range(1000)]
    sender.send_signal(signal.SIGKILL)
    sender.wait(GUARD)
    n = len(got)
    with pytest.raises(corecast.AllSendersGone):
        while True:
            got.append(rx.recv(timeout=GUARD))
    assert len(got) > n - 1
    assert got == [message(i, 32) for i in range(len(got))], "every message drained, in order"


def test_a_stopped_receiver_is_reported_late_and_evicted(name):
    ch = corecast.Channel.create(name, slots=4, max_message=16, deadline=0.2)
    stuck = peer("hold", name)
    expect_line(stuck, "attached")
    try:
        stuck.send_signal(signal.SIGSTOP)
        tx = ch.sender()
        for i in range(4):
            tx.send(message(i, 16))
        with pytest.raises(corecast.ReceiversLate) as e:
            tx.send(message(4, 16), timeout=GUARD)
        late = e.value.late
        assert len(late) == 1 and late[0]["pid"] == stuck.pid and late[0]["unread"] >= 1
        tx.evict(late[0])
        tx.send(message(4, 16), timeout=GUARD)
        states = [m["state"] for m in ch.inspect()["members"] if m["kind"] == "receiver"]
        assert states == ["evicted"], states
    finally:
        stuck.send_signal(signal.SIGKILL)
        stuck.wait(GUARD)


def rust_peer():
    path = os.environ.get("CORECAST_STREAM_EXAMPLE")
    if not path:
        pytest.fail("CORECAST_STREAM_EXAMPLE names the built corecast/examples/stream.rs (scripts/test.sh sets it)")
    return path


def test_a_rust_sender_and_a_python_receiver(name):
    ch = corecast.Channel.create(name, slots=64, max_message=256)
    rx = ch.receiver()
    rust = subprocess.Popen([rust_peer(), "send", name, "5000", "200", "1"], stdout=subprocess.PIPE, text=True)
    for i in range(5000):
        assert rx.recv(timeout=GUARD) == message(i, 200), f"message {i}"
    assert rust.wait(GUARD) == 0
    with pytest.raises(corecast.AllSendersGone):
        rx.recv(timeout=GUARD)


def test_a_python_sender_and_a_rust_receiver(name):
    ch = corecast.Channel.create(name, slots=64, max_message=256)
    rust = subprocess.Popen([rust_peer(), "recv", name, "5000"], stdout=subprocess.PIPE, text=True)
    assert rust.stdout.readline().strip() == "attached"
    tx = ch.sender()
    give_up = time.monotonic() + GUARD
    while tx.live_receivers < 1:
        assert time.monotonic() < give_up
        time.sleep(0.002)
    for i in range(5000):
        with tx.loan() as loan:
            loan.view[:200] = message(i, 200)
            loan.commit(200)
    tx.close()
    out, _ = rust.communicate(timeout=GUARD)
    assert rust.returncode == 0 and out.strip() == "ok 5000", out
