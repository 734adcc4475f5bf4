"""asyncio over fileno(), numpy without copies, threads creating channels."""

import asyncio
import threading
import time

import numpy as np
import pytest

import corecast
from conftest import message


def test_an_asyncio_receiver_over_its_fileno(name):
    ch = corecast.Channel.create(name, slots=16, max_message=64)
    rx = ch.receiver()
    tx = ch.sender()

    def produce():
        # Another thread: a send that waits for room must not block the loop.
        for i in range(2000):
            tx.send(message(i, 40), timeout=60)
            if i % 500 == 0:
                time.sleep(0.01)
        tx.close()

    async def main():
        producer = threading.Thread(target=produce)
        producer.start()
        got = [m async for m in rx]
        producer.join(60)
        return got

    got = asyncio.run(asyncio.wait_for(main(), 120))
    assert got == [message(i, 40) for i in range(2000)]


def test_a_cancelled_async_receive_consumes_nothing(name):
    ch = corecast.Channel.create(name, slots=16, max_message=64)
    rx = ch.receiver()
    tx = ch.sender()

    async def main():
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(rx.arecv(), 0.05)
        tx.send(b"after the cancel")
        return await asyncio.wait_for(rx.arecv(), 60)

    assert asyncio.run(main()) == b"after the cancel"


def test_numpy_reads_a_borrowed_message_and_fills_a_loan_without_copies(name):
    frame = 1 << 20
    ch = corecast.Channel.create(name, slots=4, max_message=frame)
    rx = ch.receiver()
    tx = ch.sender()
    data = np.arange(frame // 8, dtype=np.uint64)
    with tx.loan() as loan:
        dst = np.frombuffer(loan.view, dtype=np.uint64)
        np.copyto(dst, data)
        del dst
        loan.commit(frame)
    with rx.recv_in_place() as m:
        view = m.view
        arr = np.frombuffer(view, dtype=np.uint64)
        assert np.array_equal(arr, data)
        start = arr.__array_interface__["data"][0]
        lo, hi = mapping_of(start)
        assert lo <= start and start + frame <= hi, "the array's data lies inside the message's mapping"
        assert "corecast" in mapping_name(start), "... which is a corecast region"
        with pytest.raises(corecast.BorrowActive):
            m.release()
        del arr, view
    assert rx.next_sequence == 1


def mapping_of(addr):
    for line in open("/proc/self/maps"):
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        if lo <= addr < hi:
            return lo, hi
    raise AssertionError(f"no mapping holds {addr:#x}")


def mapping_name(addr):
    for line in open("/proc/self/maps"):
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        if lo <= addr < hi:
            return line.strip()
    return ""


def test_threads_creating_channels_never_deadlock_the_keeper_start(name):
    stop = threading.Event()
    errors = []

    def noise():
        k = 0
        while not stop.is_set():
            junk = [bytearray(1000) for _ in range(50)]
            print("noise", k, len(junk), end="\r", flush=True)
            k += 1

    def churn(t):
        try:
            for k in range(200):
                ch = corecast.Channel.create(f"{name[:40]}-{t}-{k}", slots=2, max_message=8)
                ch.destroy()
        except Exception as e:  # reported below
            errors.append(e)

    noisy = [threading.Thread(target=noise) for _ in range(2)]
    for n in noisy:
        n.start()
    workers = [threading.Thread(target=churn, args=(t,)) for t in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(300)
    stop.set()
    for n in noisy:
        n.join(60)
    assert not any(w.is_alive() for w in workers), "a channel creation hung"
    assert errors == []
