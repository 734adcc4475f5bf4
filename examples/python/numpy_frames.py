"""1 MiB numpy frames without copies: the sender fills each frame in the
channel's memory (np.copyto into a loan), the receiver reads it where it
lies (np.frombuffer over a borrowed message). Runs both ends itself.

    python numpy_frames.py [FRAMES]
"""

import os
import subprocess
import sys
import time

import numpy as np

import corecast

FRAME = 1 << 20
SHAPE = (512, 256)  # 512 x 256 float64 = 1 MiB


def receive(name, frames):
    ch = corecast.Channel.open(name)
    rx = ch.receiver()
    print("attached", flush=True)
    for k in range(frames):
        with rx.recv_in_place(timeout=60) as m:
            view = m.view
            frame = np.frombuffer(view, dtype=np.float64).reshape(SHAPE)  # no copy
            assert frame[0, 0] == k and frame[-1, -1] == k + SHAPE[0] * SHAPE[1] - 1, k
            del frame, view  # a view alive at release is refused
    print(f"checked {frames} frames", flush=True)


def send(frames):
    name = f"numpy-frames-{os.getpid()}"
    ch = corecast.Channel.create(name, slots=4, max_message=FRAME)
    child = subprocess.Popen([sys.executable, __file__, "receive", name, str(frames)], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "attached"
    tx = ch.sender()
    base = np.arange(SHAPE[0] * SHAPE[1], dtype=np.float64).reshape(SHAPE)
    t0 = time.perf_counter()
    for k in range(frames):
        with tx.loan(timeout=60) as loan:
            view = loan.view
            np.copyto(np.frombuffer(view, dtype=np.float64).reshape(SHAPE), base + k)
            del view
            loan.commit(FRAME)
    tx.close()
    out, _ = child.communicate(timeout=120)
    took = time.perf_counter() - t0
    print(out.strip(), f"({frames / took:.0f} frames/s, {frames * FRAME / took / 1e9:.2f} GB/s)")
    assert child.returncode == 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "receive":
        receive(sys.argv[2], int(sys.argv[3]))
    else:
        send(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
