"""bench/run-time-cost.py --cpu (docs/runtime-cost.md, "Where the wall-clock
gap goes"): what it reads from /proc about QEMU's threads, checked against a
real process that burns known amounts of CPU in a thread named like QEMU's
vCPU thread and in its main thread; and its fit of FG's CPU time at equal
preemption counts, on data built with known coefficients.  No guest boots."""
import subprocess
import sys

import pytest

from conftest import REPO, load_script

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
    return load_script("runtime_cost", REPO / "bench" / "run-time-cost.py")


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


def test_bootprof_plugin_builds_and_exports_the_plugin_api(rc, tmp_path):
    """--boot-profile's plugin (BOOTPROF_C) builds with -Werror against QEMU
    7.2's qemu-plugin.h and exports what QEMU looks up when it loads it."""
    hdr = REPO / "build" / "qemu-plugin" / "include" / "qemu-plugin.h"
    if not hdr.is_file():
        pytest.skip("no build/qemu-plugin/include/qemu-plugin.h (make -C perf-model fetches it)")
    so = rc.build_bootprof(out=tmp_path / "fgk-bootprof.so")
    syms = subprocess.run(["nm", "-D", "--defined-only", str(so)], capture_output=True,
                          text=True, check=True).stdout.split()
    assert "qemu_plugin_install" in syms and "qemu_plugin_version" in syms
    assert (tmp_path / "fgk-bootprof.c").read_text() == rc.BOOTPROF_C


def test_boot_profile_counts_per_function(rc):
    """The plugin's lines, read back and summed per function: instructions
    are block size x executions; blocks the names do not cover are kept
    apart; the time-bound loops can be left out of the totals."""
    text = ("tb ffffffff81000010 4 10 2 0 0\n"
            "tb ffffffff81000020 3 5 5 7 9\n"
            "tb ffffffff81400000 2 100 0 0 0\n"
            "tb ffffffff82000000 1 1 1 0 0\n"
            "page ffffffff81000000 7\n")
    blocks, pages = rc.parse_bootprof(text)
    assert pages == {0xffffffff81000000: 7}
    names = {0xffffffff81000010: "f", 0xffffffff81000020: "f", 0xffffffff81400000: "delay_tsc"}
    per = rc.attribute_blocks(blocks, names.get)
    assert per["f"] == {"insns": 4 * 10 + 3 * 5, "execs": 15, "xpage": 7, "smc": 7, "textw": 9}
    assert per["delay_tsc"]["insns"] == 200
    assert per["(not in vmlinux)"]["execs"] == 1
    run = {"functions": per}
    assert rc.prof_totals(run)["insns"] == 55 + 200 + 1
    assert rc.prof_totals(run, rc.TIME_BOUND)["insns"] == 55 + 1


def test_console_intervals_pair_messages_by_text(rc, capsys):
    """Console lines are matched across runs by their text with numbers
    masked (first occurrence); an interval's FG - nofgkaslr is the
    difference of the two runs' gaps between the same two messages."""
    nf = rc.console_stamps("[    0.100000] a 1\n[    0.200000] b 0x10\n[    0.300000] b 0x20\n"
                           "[    0.500000] Run /init as init process\n")
    fg = rc.console_stamps("junk\n[    0.100000] a 2\n[    0.250000] b 0x30\n"
                           "[    0.650000] Run /init as init process\n")
    assert nf == {"a N": 0.1, "b N": 0.2, "Run /init as init process": 0.5}
    rc.console_summary([(fg, nf)] * 4)
    out = capsys.readouterr().out
    assert "+100.0 ms" in out and "+50.0 ms" in out and "at 'Run /init as init process': +150.0 ms" in out


def test_smc_price_program_builds_and_runs_on_the_host(rc, tmp_path):
    """--smc-price's guest program builds static with -Werror and, run on the
    host (where no page check applies), prints its measurements."""
    c, exe = tmp_path / "smcbench.c", tmp_path / "smcbench"
    c.write_text(rc.SMCBENCH_C)
    subprocess.run(["cc", "-O2", "-static", "-Wall", "-Werror", "-o", str(exe), str(c)], check=True)
    out = subprocess.run([str(exe), "1000", "1"], capture_output=True, text=True, check=True).stdout
    assert out.count("smc-price: ") == 7, out
    assert "1000 stores: page with code" in out


def test_perf_summary_turns_samples_into_ms_per_run(rc, capsys):
    """--cpu --perf: samples at PERF_FREQ become ms; a symbol's Δ is summed
    over the pairs and divided by their number; the largest |Δ| first."""
    f = rc.PERF_FREQ

    def run(a, b):
        return {"perf": {"kernel boot": {"qemu x": a, "generated code": b}}}
    pairs = [(run(f // 10, f), run(0, f)), (run(f // 10, f), run(0, f + f // 100))]
    rc.perf_summary(pairs)
    out = capsys.readouterr().out.splitlines()
    i = next(k for k, ln in enumerate(out) if ln.startswith("  kernel boot:"))
    assert "qemu x" in out[i + 1] and "+100.0 ms" in out[i + 1]
    assert "generated code" in out[i + 2] and "-5.0 ms" in out[i + 2]
