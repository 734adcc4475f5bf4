"""Fan-out between Python processes: corecast against what Python users use
today, on this machine. One sender process, N receiver processes, every
payload checked; interleaved rounds (every point once per round, the value
is the median over rounds); the Rust corecast figure measured in the same
run (`corecast bench fanout`, once per round) for the cost Python adds.

    python corecast-py/bench/fanout.py --corecast target/release/corecast \\
        [--receivers 1,2,4] [--sizes 64,65536,1048576] [--rounds 3] [--seconds 0.5] [--out FILE]

Mechanisms: corecast (recv: one copy into bytes), corecast-inplace
(recv_in_place: checked where it lies), mp-queue (one multiprocessing.Queue
per receiver), mp-pipe (one multiprocessing.Pipe per receiver), zmq-pubsub
(pyzmq PUB/SUB over ipc://, default high-water marks: a slow subscriber
loses messages, which are counted). Needs pyzmq. The Rust figure
is the suite's `corecast` fan-out, whose processes fill and check every
byte with a computed pattern: above a few KiB that check, not the channel,
bounds it, so the "Python adds" column means something at small sizes only. Writes records in the suite's JSON-lines
schema (`corecast report FILE --html page.html` draws them) and prints a
table. A benchmark, not a test: run it on a quiet machine.
"""

import argparse
import json
import multiprocessing as mp
import os
import queue
import statistics
import struct
import subprocess
import sys
import tempfile
import time

END = (1 << 64) - 1
MECHANISMS = ["corecast", "corecast-inplace", "mp-queue", "mp-pipe", "zmq-pubsub"]


def body(size):
    """The payload of every message of `size` bytes, after its 8-byte number."""
    return bytes((k * 7 + 1) & 0xFF for k in range(size))[8:]


def make(i, size, rest):
    return struct.pack("<Q", i) + rest


class Check:
    """Counts messages in order and checks every byte of each with one
    memcmp, a borrowed view without copying it (`bytes.startswith` takes
    any buffer; comparing memoryviews in Python goes byte by byte)."""

    def __init__(self, size):
        self.rest = body(size)
        self.next = 0
        self.lost = 0
        self.bad = 0

    def see(self, msg):
        """False at the end marker."""
        (i,) = struct.unpack_from("<Q", msg)
        if i == END:
            return False
        if i > self.next:
            self.lost += i - self.next
        if isinstance(msg, bytes):
            same = len(msg) == len(self.rest) + 8 and msg.endswith(self.rest)  # no slice: no copy
        else:
            same = len(msg) == len(self.rest) + 8 and self.rest.startswith(msg[8:])
        if not same:
            self.bad += 1
        self.next = i + 1
        return True


# ----- receivers (each its own process) -----------------------------------


def rx_corecast(name, size, ready, inplace):
    import corecast

    ch = corecast.Channel.open(name)
    rx = ch.receiver()
    ready.set()
    check = Check(size)
    while True:
        if inplace:
            with rx.recv_in_place() as m:
                v = m.view
                going = check.see(v)
                del v
        else:
            going = check.see(rx.recv())
        if not going:
            return check


def rx_queue(q, size, ready):
    ready.set()
    check = Check(size)
    while check.see(q.get()):
        pass
    return check


def rx_pipe(conn, size, ready):
    ready.set()
    check = Check(size)
    while check.see(conn.recv_bytes()):
        pass
    return check


def rx_zmq(addr, size, ready):
    import zmq

    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.connect(addr)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    # Subscribed once the publisher's hello arrives.
    while struct.unpack_from("<Q", sub.recv())[0] != END - 1:
        pass
    ready.set()
    check = Check(size)
    try:
        while True:
            msg = sub.recv()
            if struct.unpack_from("<Q", msg)[0] == END - 1:
                continue
            if not check.see(msg):
                return check
    finally:
        # A socket left open makes the context's end wait at exit.
        sub.close(linger=0)


def receiver(kind, handle, size, ready, results):
    if kind in ("corecast", "corecast-inplace"):
        check = rx_corecast(handle, size, ready, kind == "corecast-inplace")
    elif kind == "mp-queue":
        check = rx_queue(handle, size, ready)
    elif kind == "mp-pipe":
        check = rx_pipe(handle, size, ready)
    else:
        check = rx_zmq(handle, size, ready)
    results.put((time.monotonic(), check.next, check.lost, check.bad))


# ----- one point -----------------------------------------------------------


def point(ctx, kind, n, size, seconds):
    """Messages per second every receiver got, and losses and bad bytes."""
    ready = [ctx.Event() for _ in range(n)]
    results = ctx.Queue()
    rest = body(size)
    chan = None
    if kind.startswith("corecast"):
        import corecast

        name = f"pybench-{os.getpid()}-{kind}-{n}-{size}"
        chan = corecast.Channel.create(name, slots=64, max_message=max(size, 16), deadline=None)
        handles = [name] * n
    elif kind == "mp-queue":
        handles = [ctx.Queue() for _ in range(n)]
    elif kind == "mp-pipe":
        pipes = [ctx.Pipe(duplex=False) for _ in range(n)]
        handles = [r for r, _ in pipes]
    else:
        import zmq

        addr = f"ipc://{tempfile.gettempdir()}/pybench-{os.getpid()}.ipc"
        pub = zmq.Context.instance().socket(zmq.PUB)
        pub.bind(addr)
        handles = [addr] * n
    procs = [ctx.Process(target=receiver, args=(kind, handles[k], size, ready[k], results)) for k in range(n)]
    for p in procs:
        p.start()
    if kind == "zmq-pubsub":
        hello = make(END - 1, size, rest)
        while not all(e.is_set() for e in ready):
            pub.send(hello)
            time.sleep(0.001)
    else:
        for e in ready:
            e.wait(60)
    if chan is not None:
        tx = chan.sender()
        while tx.live_receivers < n:
            time.sleep(0.001)
        send = tx.send
    elif kind == "mp-queue":
        queues = handles

        def send(m):
            for q in queues:
                q.put(m)
    elif kind == "mp-pipe":
        ends = [w for _, w in pipes]

        def send(m):
            for w in ends:
                w.send_bytes(m)
    else:
        send = pub.send
    start = time.monotonic()
    sent = 0
    while time.monotonic() - start < seconds:
        for _ in range(16):
            send(make(sent, size, rest))
            sent += 1
    end = make(END, size, rest)
    send(end)
    ends = []
    give_up = time.monotonic() + 600
    while len(ends) < n:
        try:
            ends.append(results.get(timeout=0.05))
        except queue.Empty:
            assert time.monotonic() < give_up, f"{kind}: receivers did not finish"
            if kind == "zmq-pubsub":
                send(end)  # PUB drops what a full subscriber cannot take: the end marker too
    for p in procs:
        p.join(60)
    if chan is not None:
        tx.close()
        chan.destroy()
    if kind == "zmq-pubsub":
        pub.close(linger=0)
    took = max(e[0] for e in ends) - start
    got = min(e[1] - e[2] for e in ends)
    return got / took, sum(e[2] for e in ends), sum(e[3] for e in ends)


# ----- the run -------------------------------------------------------------


def rust_round(corecast_bin, receivers, sizes, out):
    cmd = [corecast_bin, "bench", "fanout", "--mechanisms", "corecast", "--receivers", receivers, "--sizes", sizes]
    subprocess.run(cmd + ["--duration", "300ms", "--repetitions", "1", "--out", out], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corecast", required=True, help="the corecast command (for the Rust figure and the record's machine)")
    ap.add_argument("--receivers", default="1,2,4")
    ap.add_argument("--sizes", default="64,65536,1048576")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=0.5)
    ap.add_argument("--mechanisms", default=",".join(MECHANISMS))
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    ns = [int(x) for x in a.receivers.split(",")]
    sizes = [int(x) for x in a.sizes.split(",")]
    kinds = a.mechanisms.split(",")
    ctx = mp.get_context("spawn")
    samples = {}
    losses = {}
    rust_file = tempfile.mktemp(suffix=".jsonl")
    for r in range(a.rounds):
        for kind in kinds:
            for n in ns:
                for size in sizes:
                    rate, lost, bad = point(ctx, kind, n, size, a.seconds)
                    if bad:
                        sys.exit(f"{kind} N={n} {size} B: {bad} messages with wrong bytes")
                    samples.setdefault((kind, n, size), []).append(rate)
                    losses[(kind, n, size)] = losses.get((kind, n, size), 0) + lost
                    print(f"round {r + 1}/{a.rounds} {kind:17} N={n} {size:>8} B  {rate / 1e3:9.1f}k msg/s"
                          + (f"  ({lost} lost)" if lost else ""), file=sys.stderr, flush=True)
        rust_round(a.corecast, a.receivers, a.sizes, rust_file)
    rust = {}
    template = None
    for line in open(rust_file):
        rec = json.loads(line)
        if rec["metric"] == "throughput" and rec["unit"] == "msg/s":
            rust.setdefault((rec["receivers"], rec["size"]), []).append(rec["value"])
            template = rec
    os.unlink(rust_file)
    out = a.out or os.path.join(os.environ.get("CORECAST_RESULTS", tempfile.gettempdir()),
                                time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-python-fanout.jsonl")
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "a") as f:
        for (kind, n, size), s in sorted(samples.items()):
            rec = dict(template)
            rec.update(mechanism=f"python-{kind}", size=size, receivers=n, value=statistics.median(s),
                       median=statistics.median(s), min=min(s), max=max(s), samples=s, repetitions=len(s),
                       count=0, duration_s=a.seconds, warmup=0, command_line=sys.argv,
                       notes=[f"median of {len(s)} interleaved rounds", f"{losses[(kind, n, size)]} messages lost"])
            rec.pop("p99", None)
            f.write(json.dumps(rec) + "\n")
        for (n, size), s in sorted(rust.items()):
            rec = dict(template)
            rec.update(mechanism="rust-corecast", size=size, receivers=n, value=statistics.median(s),
                       median=statistics.median(s), min=min(s), max=max(s), samples=s, repetitions=len(s))
            f.write(json.dumps(rec) + "\n")
    print(f"records: {out}")
    print(f"{'N':>2} {'size':>8} | " + " ".join(f"{k:>16}" for k in kinds) + f" | {'rust corecast':>13} | python adds (ns/msg)")
    for n in ns:
        for size in sizes:
            vals = [statistics.median(samples[(k, n, size)]) for k in kinds]
            rv = statistics.median(rust[(n, size)])
            py = statistics.median(samples[("corecast", n, size)]) if "corecast" in kinds else None
            adds = f"{(1 / py - 1 / rv) * 1e9:8.0f}" if py else ""
            print(f"{n:>2} {size:>8} | " + " ".join(f"{v / 1e3:15.1f}k" for v in vals) + f" | {rv / 1e3:12.1f}k | {adds}")
    def ratio(k1, k2, n, size):
        return statistics.median(samples[(k1, n, size)]) / statistics.median(samples[(k2, n, size)])
    if {"corecast", "mp-queue", "zmq-pubsub"} <= set(kinds) and 4 in ns:
        if 64 in sizes:
            print(f"corecast / mp-queue at 64 B, N = 4: {ratio('corecast', 'mp-queue', 4, 64):.1f}x (target >= 10x)")
        if 1048576 in sizes:
            best = max(ratio(k, "zmq-pubsub", 4, 1048576) for k in ("corecast", "corecast-inplace"))
            print(f"corecast / pyzmq at 1 MiB, N = 4: {best:.1f}x (target >= 5x)")


if __name__ == "__main__":
    main()
