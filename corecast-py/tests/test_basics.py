"""One process: sending, receiving, loans, borrowed messages, errors."""

import threading
import time

import pytest

import corecast
from conftest import message


def test_copy_and_in_place_round_trip(name):
    with corecast.Channel.create(name, slots=8, max_message=64) as ch:
        tx, rx = ch.sender(), ch.receiver()
        tx.send(b"hello")
        tx.send(bytearray(b"from a bytearray"))
        tx.send(memoryview(b"xxfrom a view")[2:])
        assert rx.recv() == b"hello"
        buf = bytearray(64)
        n = rx.recv_into(buf)
        assert bytes(buf[:n]) == b"from a bytearray"
        with rx.recv_in_place() as m:
            assert bytes(m.view) == b"from a view" and len(m) == 11 and bytes(m) == b"from a view"
            assert m.sequence == 2 and m.sender == tx_index(ch)
            assert m.view.readonly
        with pytest.raises(corecast.WouldBlock, match="no message is ready"):
            rx.try_recv()
        assert rx.next_sequence == 3


def tx_index(ch):
    return [m for m in ch.inspect()["members"] if m["kind"] == "sender"][0]["index"]


def test_a_loan_is_written_in_place_and_committed_or_aborted(name):
    with corecast.Channel.create(name, slots=8, max_message=32) as ch:
        tx, rx = ch.sender(), ch.receiver()
        with tx.loan() as loan:
            assert len(loan) == 32 and not loan.view.readonly
            loan.view[:5] = b"hello"
            loan.commit(5)
        with tx.loan() as loan:
            loan.view[:4] = b"lost"
        # Left uncommitted: aborted, receivers skip its number.
        tx.send(b"after")
        assert rx.recv() == b"hello"
        assert rx.recv() == b"after"
        with tx.loan() as loan:
            with pytest.raises(corecast.TooLarge):
                loan.commit(33)


def test_a_loan_takes_the_size_it_asks_for_and_the_ring_its_bytes(name):
    # 640 bytes per sender: ten 64-byte units, while 8 numbers may be in
    # flight; a message of up to 112 bytes rides in its slot and takes none.
    with corecast.Channel.create(name, slots=8, max_message=250, ring_bytes=640) as ch:
        assert ch.config["ring_bytes"] == 640
        tx, rx = ch.sender(), ch.receiver()
        with pytest.raises(corecast.TooLarge):
            tx.loan(251)
        big = b"big" * 40
        with tx.loan(250) as loan:  # four units
            assert len(loan) == 250
            loan.view[:120] = big
            loan.commit(120)  # gives two units back
        for i in range(4):  # two units each: 2 + 8 = 10, the whole area
            tx.send(bytes([i]) * 120)
        with pytest.raises(corecast.WouldBlock):
            tx.try_send(b"y" * 120)  # numbers are left, bytes are not
        tx.try_send(b"x")  # carried in its slot: no bytes needed
        assert rx.recv() == big
        tx.try_send(b"y" * 120)  # the first frame was given back
        assert [rx.recv() for _ in range(6)] == [bytes([i]) * 120 for i in range(4)] + [b"x", b"y" * 120]


def test_a_view_that_outlives_its_message_blocks_the_release(name):
    with corecast.Channel.create(name, slots=8, max_message=32) as ch:
        tx, rx = ch.sender(), ch.receiver()
        tx.send(b"one")
        tx.send(b"two")
        m = rx.recv_in_place()
        kept = m.view[1:]  # a slice shares the export
        with pytest.raises(corecast.BorrowActive, match="view of this message is still alive"):
            m.release()
        with pytest.raises(corecast.BorrowActive, match="release it first"):
            rx.recv()
        assert bytes(kept) == b"ne", "the held message's bytes are unchanged"
        kept.release()
        m.release()
        assert rx.recv() == b"two"
        with pytest.raises(ValueError, match="released"):
            m.view


def test_a_view_of_a_loan_blocks_its_commit(name):
    with corecast.Channel.create(name, slots=8, max_message=32) as ch:
        tx, rx = ch.sender(), ch.receiver()
        loan = tx.loan()
        v = loan.view
        v[:2] = b"hi"
        with pytest.raises(corecast.BorrowActive):
            loan.commit(2)
        with pytest.raises(corecast.BorrowActive, match="commit or abort"):
            tx.send(b"meanwhile")
        v.release()
        loan.commit(2)
        assert rx.recv() == b"hi"


def test_errors_are_typed_with_the_library_sentences(name):
    with pytest.raises(corecast.InvalidName, match="invalid channel name"):
        corecast.Channel.create("bad/name")
    with pytest.raises(corecast.InvalidConfig, match="slots is 3"):
        corecast.Channel.create(name, slots=3)
    with pytest.raises(corecast.NotFound):
        corecast.Channel.open(name)
    with corecast.Channel.create(name, slots=2, max_message=8, deadline=None) as ch:
        with pytest.raises(corecast.AlreadyExists):
            corecast.Channel.create(name)
        tx, rx = ch.sender(), ch.receiver()
        with pytest.raises(corecast.TooLarge) as e:
            tx.send(b"123456789")
        assert (e.value.bytes, e.value.max_bytes) == (9, 8)
        tx.send(b"1")
        tx.send(b"2")
        with pytest.raises(corecast.WouldBlock):
            tx.try_send(b"3")
        with pytest.raises(corecast.Timeout):
            tx.send(b"3", timeout=0.05)
        with pytest.raises(corecast.BufferTooSmall) as e:
            rx.recv_into(bytearray(0))
        assert e.value.needed == 1
        assert rx.recv() == b"1", "BufferTooSmall consumed nothing"
    for cls in (corecast.WouldBlock, corecast.Gap, corecast.Corrupt, corecast.AllSendersGone, corecast.BorrowActive):
        assert issubclass(cls, corecast.Error)


def test_iteration_ends_when_every_sender_is_gone(name):
    with corecast.Channel.create(name, slots=16, max_message=64) as ch:
        rx = ch.receiver()
        tx = ch.sender()
        for i in range(10):
            tx.send(message(i, 20))
        tx.close()
        got = list(rx)
        assert got == [message(i, 20) for i in range(10)]


def test_inspect_lists_members_and_settings(name):
    with corecast.Channel.create(name, slots=16, max_message=100, deadline=2.5) as ch:
        tx, rx = ch.sender(), ch.receiver()
        tx.send(b"x")
        s = ch.inspect()
        assert s["config"]["slots"] == 16 and s["config"]["max_message"] == 100 and s["config"]["deadline"] == 2.5
        assert s["sent"] == 1 and s["keeper_alive"]
        kinds = sorted(m["kind"] for m in s["members"])
        assert kinds == ["receiver", "sender"]
        assert name in corecast.list()
        del rx, tx


def test_another_thread_runs_while_one_blocks_in_recv(name):
    with corecast.Channel.create(name, slots=8, max_message=16) as ch:
        rx = ch.receiver()
        tx = ch.sender()
        got = []
        t = threading.Thread(target=lambda: got.append(rx.recv(timeout=60)))
        t.start()
        # This thread keeps running Python while the other waits.
        counted = sum(range(200_000))
        time.sleep(0.2)
        tx.send(b"late")
        t.join(60)
        assert got == [b"late"] and counted == 19_999_900_000


def test_keyboard_interrupt_stops_a_blocking_receive(name):
    import os
    import signal

    with corecast.Channel.create(name, slots=8, max_message=16) as ch:
        rx = ch.receiver()
        _tx = ch.sender()
        timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            rx.recv()
        assert time.monotonic() - t0 < 30
        timer.join()
        # The receiver still works afterwards.
        _tx.send(b"still here")
        assert rx.recv(timeout=60) == b"still here"


def test_destroy_tells_endpoints(name):
    ch = corecast.Channel.create(name, slots=8, max_message=16)
    rx = ch.receiver()
    ch.destroy()
    with pytest.raises(corecast.Destroyed):
        rx.recv(timeout=60)


def test_history_and_lossy_receivers(name):
    with corecast.Channel.create(name, slots=8, max_message=64, history=4) as ch:
        assert ch.config["history"] == 4
        tx = ch.sender()
        for i in range(10):
            tx.send(bytes([i]))
        oldest = ch.receiver(start="oldest")
        assert [oldest.recv() for _ in range(4)] == [bytes([i]) for i in range(6, 10)]
        latest = ch.receiver(start="latest")
        assert latest.recv() == bytes([9])
        with pytest.raises(ValueError):
            ch.receiver(start="first")
        oldest.close()  # receivers the sender waits for: gone
        latest.close()
        lossy = ch.receiver(lossy=True)
        assert [m["lossy"] for m in ch.inspect()["members"] if m["kind"] == "receiver"].count(True) == 1
        for i in range(20):  # never waits for the lossy receiver
            tx.try_send(bytes([i]))
        with pytest.raises(corecast.Overrun) as e:
            lossy.recv()
        assert e.value.lost > 0 and e.value.expected == 10
        got = []
        while True:
            try:
                got.append(lossy.try_recv())
            except corecast.WouldBlock:
                break
        assert e.value.lost + len(got) == 20
