"""bench/runtime-cost.py --cpu (docs/runtime-cost.md, "Where the wall-clock
gap goes"): what it reads from /proc about QEMU's threads, checked against a
real process that burns known amounts of CPU in a thread named like QEMU's
vCPU thread and in its main thread; and its fit of FG's CPU time at equal
preemption counts, on data built with known coefficients.  No guest boots."""
import importlib.util
import subprocess
import sys

import pytest

from conftest import REPO

CHILD = r"""
import sys, threading, time
def spin(s):
    t = time.thread_time()
    while time.thread_time() - t < s:
        pass
spin(0.3)                                   # main thread: not the vCPU's
def vcpu():
    with open(f"/proc/self/task/{threading.get_native_id()}/comm", "w") as f:
        f.write("ALL CPUs/TCG")
    spin(0.4)
    print(f"{time.thread_time():.6f}", flush=True)
    time.sleep(30)
threading.Thread(target=vcpu, daemon=True).start()
time.sleep(30)
"""


@pytest.fixture(scope="module")
def rc():
    spec = importlib.util.spec_from_file_location("runtime_cost", REPO / "bench" / "runtime-cost.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def test_qemu_times_reads_the_vcpu_thread(rc):
    """The 'TCG' thread's on-CPU time is that thread's own (its
    thread_time(), not the main thread's 0.3 s); the process's utime+stime
    holds both threads; a process that is gone gives None."""
    p = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    try:
        own = float(p.stdout.readline())
        proc, run, wait, slices = rc.qemu_times(p.pid)
    finally:
        p.kill()
        p.wait()
    assert own >= 0.4
    assert abs(run - own) < 0.02, (run, own)
    assert proc >= 0.3 + 0.4 - 2 / rc.TICK, proc
    assert wait >= 0 and slices >= 1
    assert rc.qemu_times(p.pid) is None


def test_fg_effect_recovers_known_coefficients(rc):
    """CPU time = 1 s + 10 ms per slice + 0.1 s if FG, exactly: the fit gives
    0.1 s and 10 ms whatever the slices."""
    def run(fg, slices):
        cpu = {n: [0.0, 1 + 0.01 * slices + (0.1 if fg else 0.0), 0.0, slices]
               for n in [m for m, _ in rc.WALL_MARKS] + ["total"]}
        return {"cpu": cpu}
    pairs = [(run(True, a), run(False, b)) for a, b in ((40, 90), (200, 35), (77, 120), (15, 16))]
    fg, per_slice = rc.fg_effect(pairs, "kernel boot")
    assert fg == pytest.approx(0.1, abs=1e-9)
    assert per_slice == pytest.approx(0.01, abs=1e-12)
