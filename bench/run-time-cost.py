#!/usr/bin/env python3
"""Run-time cost of the shuffle, simulated (docs/runtime-cost.md).

Boots the same kernel-heavy guest workloads (perf-model/fgk-work.c: getpid,
pipe ping-pong, fork+exec, open/read/close, create/unlink, mmap/munmap,
context switches, TCP over loopback where the kernel has networking, a
compression job, a stat/readdir walk) under QEMU TCG with the fgk-perf
plugin (perf-model/), which counts each workload apart by its markers:
FG-KASLR with several random seeds, the same image
with `nofgkaslr`, and the build without CONFIG_FG_KASLR when there is one;
interleaved, so machine load hits all alike.  Per run: kernel instructions,
L1i / L2 / iTLB misses per kilo-instruction and estimated kernel cycles of
the phase after init (the workload), plus the boot phase; then medians and
the spread over seeds, against nofgkaslr measured in the same run.  The
guest's wall clock per phase comes from the same runs (TCG time, not a
hardware estimate).

  bench/run-time-cost.py [SEEDS] [--kernel DIR] [--nofg DIR] [--text-page 2M|4K]
  bench/run-time-cost.py --wall ROUNDS [--kernel DIR]
  bench/run-time-cost.py --cpu ROUNDS [--nochain] [--perf] [--kernel DIR] [--json FILE]
  bench/run-time-cost.py --cpu-report JSON...   (the --cpu summary of saved runs, pooled)
  bench/run-time-cost.py --remedies WORKLOAD [--draws N] [--groups 4,16,64] [--kernel DIR]
  bench/run-time-cost.py --boot-profile PAIRS [--kernel DIR] [--json FILE]
  bench/run-time-cost.py --console-times PAIRS [--kernel DIR] [--json FILE]
  bench/run-time-cost.py --smc-price [--kernel DIR]

--boot-profile: what FG-KASLR changes in the kernel's boot phase, per
function (docs/runtime-cost.md, "Linux 6.12"): PAIRS interleaved boots to
init (nofgkaslr, a random seed) with a second small plugin, fgk-bootprof
(its source is BOOTPROF_C below; built into build/perf-model/), which
counts per translated block its executions, its entries from a block on
another 4 KiB page and the stores into pages holding translated code (the
kernel patching itself, which QEMU must check); the blocks are named
through the seed's layout (libfgk) and System.map's symbols.

--console-times: where in the boot the time goes, on the guest's own
clock (printk times; under TCG the host's): PAIRS interleaved boots, no
plugin (the command line has initcall_debug, whose lines stay below the
console's level), and per interval between two console messages every
run printed, FG - nofgkaslr of the same pair.

--smc-price: the price TCG puts on a store into a guest page that holds
translated code, which QEMU checks for self-modifying code, against a store
into a page without code: a small static guest program (SMCBENCH_C below,
built into build/perf-model/), timed with the guest's clock.

--remedies: the cause of a workload's cost and layouts that might lower it,
by trace-driven replay (docs/runtime-cost.md, "Cause and remedies"): one
guest run in link order (nofgkaslr) and one with a seed record the kernel
blocks the workload executes (fgk-perf trace=, cached in
build/perf-model/traces/); perf-model/fgk-replay runs the link-order trace
through the same model under N draws of each layout family (libfgk's real
layouts; shuffled runs of consecutive sections; whole object files; each
function's .cold part next to it; the trace's own hot set packed first)
and prints their cost against their entropy, then the worst real layout's
extra misses by function and L1i set.

--wall: where the wall-clock gap between FG-KASLR and nofgkaslr boots of the
same image goes, without the plugin: ROUNDS interleaved pairs (order
alternating) of boot + a trivial script, the host's time at which each phase's
console line arrives (earlyprintk=ttyS0 on both: the kernel's boot console
replays its log from setup_arch() on): firmware (QEMU start to SeaBIOS's
"Booting from ROM"), decompressor (to "Linux version": the setup code, the
decompressor and start_kernel() up to parse_early_param()), kernel boot (to
"Run /init"), init and script (to its last line);
the decompressor's own FG-KASLR phase_cycles (/proc/fgkaslr_stats), and
QEMU's translation statistics (`info jit` over QMP) at the script's end.

--cpu: the same runs and phases, and at each phase's console line also
QEMU's CPU time (polled every 5 ms): the vCPU thread's time on a CPU and
its time waiting on a run queue (/proc/PID/task/TID/schedstat, ns; QEMU
runs with -name debug-threads=on to name it "ALL CPUs/TCG") and the whole
process's utime+stime (/proc/PID/stat); per phase the medians of each side
and the median and range of the FG - nofgkaslr difference within each
interleaved pair.  CPU time counts what QEMU did, not how long it waited
for the host's CPUs, so it holds up on a shared host where wall time does
not.  --nochain runs QEMU with -d nochain (no translated block jumps
straight to another: every block returns to QEMU's main loop), which takes
TCG's block chaining, and so its page rule, out of the comparison.
--perf also samples the vCPU thread with perf (cpu-clock, 5 kHz, from
the moment the thread exists) and reports per phase where in QEMU (or the
host kernel, or the translated code) FG's extra time goes.

SEEDS defaults to 5.  Default kernel build/kernel (6.1), no-FG build
build/kernel-nofg when present; for 6.12: --kernel build/kernel-6.12
--nofg build/kernel-6.12-nofg.
"""
import argparse
import bisect
import collections
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "qemu-profiles"))
import fgkrun  # noqa: E402  (also puts the libfgk binding on sys.path)
sys.path.insert(0, str(REPO / "bench"))
from fgkbench import share_autogroup_nice  # noqa: E402
import libfgk  # noqa: E402

PLUGIN = REPO / "build" / "perf-model" / "fgk-perf.so"

WORK = REPO / "build" / "perf-model" / "fgk-work"

# The workloads, numbered as perf-model/fgk-work.c's markers: each runs
# between two markers, so the plugin counts the kernel's work per workload
# ("work=K" lines; K 0 is everything outside them).  The counts keep each
# one at a few seconds of TCG time with the plugin.
WORKLOADS = ((1, "getpid", "syscall getpid"), (2, "pipe", "pipe ping-pong, 2 processes"),
             (3, "forkexec", "fork + exec + exit"), (4, "open", "open/read/close /proc/self/stat"),
             (5, "create", "file create/write/unlink (tmpfs)"),
             (6, "mmap", "mmap/touch 16 pages/munmap"),
             (7, "ctxsw", "sched_yield between 2 processes on 1 CPU"),
             (8, "tcp", "TCP ping-pong over loopback"),
             (9, "compress", "gzip + gunzip of 2 x busybox"),
             (10, "fswalk", "ls -lR /proc/self /sys/kernel"))
WORKLOAD = r"""
W=/fgk/fgk-work
ip link set lo up 2>/dev/null
$W getpid 20000
$W pipe 2000
$W forkexec 60
$W open 2000
$W create 1000
$W mmap 300
$W ctxsw 2000
$W tcp 1000
cat /bin/busybox /bin/busybox > /tmp/big
$W mark 9; gzip -c /tmp/big | gzip -dc > /dev/null; $W mark 0
rm -f /tmp/big
$W mark 10; ls -lR /proc/self /sys/kernel > /dev/null 2>&1; $W mark 0
echo seed=$(cat /proc/fgkaslr_seed 2>/dev/null)
echo workload-done
"""

FIELDS = ("all_insns", "insns", "l1i_miss", "l2_miss", "l2_data_miss", "itlb_miss",
          "stlb_miss", "cycles", "tb_exec", "tb_cross_page", "tb_trans_kernel", "tb_trans_span")


def parse_work(path):
    """The plugin report's work=K and trace lines: {K: counters, "trace": {...}}."""
    out = {}
    for line in Path(path).read_text().splitlines():
        if line.startswith(("work=", "trace_mark=")):
            kv = {k: int(v) for k, v in (x.split("=", 1) for x in line.split())}
            out["trace" if "trace_mark" in kv else kv.pop("work")] = kv
    return out


def parse(path):
    phases, work = {}, {}
    for line in Path(path).read_text().splitlines():
        if line.startswith(("phase=", "work=")):
            kv = dict(x.split("=", 1) for x in line.split())
            if "phase" in kv:
                name = kv.pop("phase")
                phases[name] = {k: int(v) for k, v in kv.items()}
            else:
                k = int(kv.pop("work"))
                work[k] = {f: int(v) for f, v in kv.items()}
    if set(phases) != {"pre", "boot", "run"}:
        raise SystemExit(f"run-time-cost: {path}: plugin report has no pre/boot/run phases")
    names = {k: name for k, name, _ in WORKLOADS}
    missing = [names[k] for k in names if k not in work]
    if missing:
        raise SystemExit(f"run-time-cost: {path}: no counts for workload(s) {', '.join(missing)}")
    phases["work"] = {names[k]: c for k, c in work.items() if k in names}
    return phases


def check_seed(kernel, append, output):
    """The guest's /proc/fgkaslr_seed (an "echo seed=..." line of the
    script) must be the fgkaslr_seed= given: the kernel replaces a malformed
    one with a random seed, silently as far as the bench can see."""
    m = re.search(r"fgkaslr_seed=(\S+)", append)
    got = re.search(r"^seed=([0-9a-f]{64})\s*$", output, re.M)
    if m and (not got or got.group(1) != m.group(1)):
        raise SystemExit(f"run-time-cost: {kernel} {append}: the guest's /proc/fgkaslr_seed is "
                         f"{got.group(1) if got else 'missing'}, not the seed given")


def one(kernel, append, text_page, script=WORKLOAD, trace=None):
    """One guest run with the plugin.  trace=(K, path): also the executed
    kernel blocks of workload K into path (fgk-perf trace=)."""
    with tempfile.TemporaryDirectory(prefix="fgk-perf.") as d:
        out = Path(d) / "perf.txt"
        arg = f"{PLUGIN},out={out},text_page={text_page}"
        if trace:
            arg += f",trace={trace[1]},trace_mark={trace[0]}"
        g = fgkrun.Guest("boot", script, kernel=Path(kernel) / "bzImage", kaslr=True, timeout=1200,
                         append=" ".join(x for x in ("kunit.enable=0", append) if x),
                         files={"/fgk/fgk-work": str(WORK)}, extra_qemu_args=["-plugin", arg])
        t0 = time.monotonic()
        g.start()
        share_autogroup_nice(g.proc.pid)
        try:
            ok = g.wait_for_console(re.escape(fgkrun.MARK_BEGIN), timeout=1200)
            t_init = time.monotonic() - t0
            res = g.wait()
            t_end = time.monotonic() - t0
        finally:
            g.kill()
        if not ok or "workload-done" not in res.output or "fgk-work: " in res.output.replace(
                "fgk-work: tcp: no IPv4", ""):
            err = re.findall(r"^fgk-work: .*$", res.output, re.M)
            raise SystemExit(f"run-time-cost: {kernel} {append}: guest failed ({res.message}) "
                             + " ".join(err))
        check_seed(kernel, append, res.output)
        if trace:
            ph = parse_work(out)
            ph["output"] = res.output
            return ph
        ph = parse(out)
        ph["net"] = "fgk-work: tcp: no IPv4" not in res.output
        ph["wall"] = {"init": t_init, "total": t_end}
        return ph


TRACES = REPO / "build" / "perf-model" / "traces"


def capture(kernel, workload, label, append, text_page="2M"):
    """A guest run of one workload with fgk-perf's trace= on, cached in
    build/perf-model/traces/WORKLOAD-LABEL.{trc,json}: the trace, the
    plugin's counters of that workload, the run's base offset (from root's
    /proc/kallsyms: _text) and the seed.  Returns the JSON's dict."""
    k = {name: k for k, name, _ in WORKLOADS}[workload]
    TRACES.mkdir(parents=True, exist_ok=True)
    trc, meta = TRACES / f"{workload}-{label}.trc", TRACES / f"{workload}-{label}.json"
    if trc.is_file() and meta.is_file():
        return json.loads(meta.read_text())
    line = [x for x in WORKLOAD.splitlines() if x.startswith(f"$W {workload} ")
            or f"$W mark {k};" in x]
    script = ("W=/fgk/fgk-work\n" + "\n".join(line) +
              "\ngrep -E ' (_text|_stext)$' /proc/kallsyms\n"
              "echo seed=$(cat /proc/fgkaslr_seed 2>/dev/null)\necho workload-done\n")
    if workload == "compress":
        script = script.replace("$W mark 9;", "cat /bin/busybox /bin/busybox > /tmp/big; $W mark 9;")
    ph = one(kernel, append, text_page, script=script, trace=(k, trc))
    syms = dict((n, int(a, 16)) for a, n in re.findall(r"^([0-9a-f]{16}) [Tt] (_s?text)\s*$",
                                                       ph["output"], re.M))
    with libfgk.Vmlinux(Path(kernel) / "vmlinux") as vm:
        name = "_text" if "_text" in syms else "_stext"
        if name not in syms:
            raise SystemExit(f"run-time-cost: {kernel} {append}: no _text in the guest's kallsyms")
        offset = syms[name] - vm.symbol(name).addr
    m = re.search(r"fgkaslr_seed=([0-9a-f]+)", append)
    d = {"workload": workload, "label": label, "append": append, "offset": offset,
         "seed": m.group(1) if m else None, "plugin": ph[k], "trace": ph["trace"]}
    if ph["trace"]["trace_truncated"]:
        raise SystemExit(f"run-time-cost: {trc}: trace truncated at trace_max")
    meta.write_text(json.dumps(d, indent=1))
    return d


JIT_SCRIPT = ("cat /proc/fgkaslr_stats 2>/dev/null; echo fgk-end-of-script > /dev/console; "
              "sleep 4")
WALL_MARKS = (("firmware", r"Booting from ROM"), ("decompressor", r"Linux version"),
              ("kernel boot", r"Run /init as init process"), ("init+script", r"fgk-end-of-script"))
JIT_FIELDS = (("TB count", r"TB count\s+(\d+)"), ("cross-page TBs", r"cross page TB count\s+(\d+)"),
              ("direct-jump TBs", r"direct jump count\s+(\d+)"),
              ("2-jump TBs", r"\(2 jumps=(\d+)"), ("host code bytes", r"gen code size\s+(\d+)"),
              ("TB flushes", r"TB flush count\s+(\d+)"), ("TB invalidates", r"TB invalidate count\s+(\d+)"))


TICK = os.sysconf("SC_CLK_TCK")


def qemu_times(pid):
    """QEMU's CPU time so far: the process's utime+stime (all threads, dead
    ones too; clock ticks, /proc/PID/stat) and, per live thread named "TCG"
    (QEMU's vCPU thread; needs -name debug-threads=on), its time on a CPU and
    its time waiting on a run queue in ns and how many times it was put on
    a CPU (/proc/PID/task/TID/schedstat).  Returns (process_s, vcpu_run_s,
    vcpu_wait_s, vcpu_slices); None for what is gone."""
    try:
        st = Path(f"/proc/{pid}/stat").read_text()
        f = st[st.rindex(")") + 2:].split()
        proc = (int(f[11]) + int(f[12])) / TICK
    except (OSError, ValueError, IndexError):
        return None
    run = wait = slices = 0
    try:
        for t in Path(f"/proc/{pid}/task").iterdir():
            try:
                if "TCG" in (t / "comm").read_text():
                    r, w, n = (t / "schedstat").read_text().split()
                    run, wait, slices = run + int(r), wait + int(w), slices + int(n)
            except (OSError, ValueError):
                continue
    except OSError:
        return None
    return proc, run / 1e9, wait / 1e9, slices



def wait_marks(g, kernel, append, t0):
    """Wait for WALL_MARKS on the console in order, polling every 5 ms; at
    each, the host's monotonic time since t0 and qemu_times()."""
    t, cpu, i = {}, {}, 0
    deadline = t0 + 600
    while i < len(WALL_MARKS):
        con = g.console_so_far()
        while i < len(WALL_MARKS) and re.search(WALL_MARKS[i][1], con):
            name = WALL_MARKS[i][0]
            t[name] = time.monotonic() - t0
            cpu[name] = qemu_times(g.proc.pid)
            i += 1
        if i < len(WALL_MARKS):
            if g.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"run-time-cost: {kernel} {append}: no '{WALL_MARKS[i][1]}' "
                                 "on the console")
            time.sleep(0.005)
    return t, cpu


PERF_FREQ = 5000


def vcpu_tid(pid, timeout=20.0):
    """QEMU's vCPU thread (named "...TCG" with -name debug-threads=on)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            for t in Path(f"/proc/{pid}/task").iterdir():
                try:
                    if "TCG" in (t / "comm").read_text():
                        return int(t.name)
                except OSError:
                    continue
        except OSError:
            return None
        time.sleep(0.005)
    return None


def perf_samples(data, start, end):
    """{"DSO SYMBOL" (or "DSO 0xADDR", DSO-relative, where the binary exports
    no symbol there; "generated code" for TCG's translated code): samples}
    of a `perf record` file between two CLOCK_MONOTONIC times."""
    r = subprocess.run(["perf", "report", "-i", str(data), "--time", f"{start:.6f},{end:.6f}",
                        "--stdio", "-n", "--sort", "dso,sym", "-v"], capture_output=True, text=True)
    c = collections.Counter()
    for ln in r.stdout.splitlines():
        m = re.match(r"\s*[\d.]+%\s+(\d+)\s+(\S+)\s+0x[0-9a-f]+\s+\S+\s+\[.\]\s+(.*)$", ln)
        if m:
            dso = m.group(2).split("/")[-1]
            c["generated code" if dso.startswith("perf-") else f"{dso} {m.group(3).strip()}"] += \
                int(m.group(1))
    return dict(c)


def one_wall(kernel, append, nochain=False, perf=False):
    extra = ["-name", "debug-threads=on"] + (["-d", "nochain"] if nochain else [])
    g = fgkrun.Guest("boot", JIT_SCRIPT, kernel=Path(kernel) / "bzImage", kaslr=True, timeout=600,
                     append=" ".join(x for x in ("kunit.enable=0 earlyprintk=ttyS0", append) if x),
                     extra_qemu_args=extra)
    with tempfile.TemporaryDirectory(prefix="fgk-perf-record.") as tmp:
        data, rec = Path(tmp) / "perf.data", None
        t0 = time.monotonic()
        g.start()
        share_autogroup_nice(g.proc.pid)
        try:
            if perf:
                tid = vcpu_tid(g.proc.pid)
                if tid is None:
                    raise SystemExit(f"run-time-cost: {kernel} {append}: no vCPU thread to sample")
                rec = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(PERF_FREQ),
                                        "-k", "CLOCK_MONOTONIC", "-t", str(tid), "-o", str(data)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            t, cpu = wait_marks(g, kernel, append, t0)
            jit = fgkrun.qmp_command(g.diag_path, "human-monitor-command", timeout=30,
                                     **{"command-line": "info jit"})
            if rec:
                rec.send_signal(2)
                rec.wait(timeout=120)
            res = g.wait()
        finally:
            g.kill()
            if rec and rec.poll() is None:
                rec.kill()
                rec.wait()
        samples = {}
        if perf:
            marks = [n for n, _ in WALL_MARKS]
            samples = {b: perf_samples(data, t0 + t[a], t0 + t[b]) for a, b in zip(marks, marks[1:])}
    phases, prev = {}, 0.0
    cphases, cprev = {}, (0.0, 0.0, 0.0, 0)
    for name, _ in WALL_MARKS:
        phases[name] = t[name] - prev
        prev = t[name]
        if cpu[name] is not None and cprev is not None:
            cphases[name] = [a - b for a, b in zip(cpu[name], cprev)]
        cprev = cpu[name]
    phases["total"] = prev
    if all(n in cphases for n, _ in WALL_MARKS):
        cphases["total"] = [sum(c[k] for n, c in cphases.items()) for k in range(4)]
    stats = {}
    for name, rx in JIT_FIELDS:
        mm = re.search(rx, jit)
        stats[name] = int(mm.group(1)) if mm else None
    ph = re.search(r"^phase_cycles: (.*)$", res.output, re.M)
    cyc = re.search(r"^cycles: (\d+)$", res.output, re.M)
    dec = {n: int(v) for n, v in re.findall(r"(\w+)=(\d+)", ph.group(1))} if ph else {}
    if cyc:
        dec["total"] = int(cyc.group(1))
    # cpu: per phase [QEMU process CPU s, vCPU thread on-CPU s, vCPU thread run-queue wait s,
    # times the vCPU thread was put on a CPU]
    out = {"wall": phases, "cpu": cphases, "jit": stats, "decomp_cycles": dec}
    if perf:
        out["perf"] = samples   # per phase (after the firmware), perf's samples of the vCPU thread
    return out


def interleaved(rounds, base="nofgkaslr"):
    """ROUNDS pairs of (label, boot option) boots of one image: `nofgkaslr`
    (labelled base) and a new random seed ("fg"), their order alternating
    from pair to pair, so that the host's load hits both alike.  Yields
    (pair number, the pair's two (label, option) in boot order)."""
    for r in range(rounds):
        seed = libfgk.random_seed()
        order = ((base, "nofgkaslr"), ("fg", f"fgkaslr_seed={seed}"))
        yield r, (order if r % 2 == 0 else order[::-1])


def wall_main(kernel, rounds):
    runs = {"nofgkaslr": [], "fg": []}
    for _, pair in interleaved(rounds):
        for label, app in pair:
            x = one_wall(kernel, app)
            runs[label].append(x)
            w = x["wall"]
            print(f"  {label:10} " + "  ".join(f"{k} {v:6.2f}s" for k, v in w.items())
                  + "  jit: " + ", ".join(f"{k} {v}" for k, v in x["jit"].items()), flush=True)
    print("wall-clock by phase (median over rounds; Δ = FG - nofgkaslr, and its share of the total Δ):")
    tot_b = statistics.median(x["wall"]["total"] for x in runs["nofgkaslr"])
    tot_f = statistics.median(x["wall"]["total"] for x in runs["fg"])
    dt = tot_f - tot_b
    for name in [n for n, _ in WALL_MARKS] + ["total"]:
        b = statistics.median(x["wall"][name] for x in runs["nofgkaslr"])
        f = statistics.median(x["wall"][name] for x in runs["fg"])
        share = f"{100 * (f - b) / dt:5.0f}% of Δ" if dt and name != "total" else ""
        print(f"  {name:13} FG {f:7.2f} s  nofgkaslr {b:7.2f} s  Δ {f - b:+6.2f} s "
              f"({100 * (f - b) / b:+5.1f}%) {share}")
    print("  (the per-phase medians need not add up to the median total)")
    for k, _ in JIT_FIELDS:
        vb = [x["jit"][k] for x in runs["nofgkaslr"] if x["jit"][k] is not None]
        vf = [x["jit"][k] for x in runs["fg"] if x["jit"][k] is not None]
        if vb and vf:
            print(f"  info jit {k:16} FG {statistics.median(vf):>10,.0f}  nofgkaslr {statistics.median(vb):>10,.0f}")
    dec = [x["decomp_cycles"] for x in runs["fg"] if x["decomp_cycles"]]
    if dec:
        print("  decompressor FG-KASLR phase_cycles (median): " + ", ".join(
            f"{k}={statistics.median(d.get(k, 0) for d in dec):,.0f}" for k in dec[0]))
    return runs


def spread(v):
    """'median (min..max)' of a list."""
    return f"{statistics.median(v):7.3f} ({min(v):.3f}..{max(v):.3f})"


def median_ci(v, n=4000, level=0.90):
    """Percentile-bootstrap interval of the median of v (fixed RNG seed, so
    the same runs give the same interval)."""
    rng = random.Random(0)
    ms = sorted(statistics.median(rng.choices(v, k=len(v))) for _ in range(n))
    return ms[int((1 - level) / 2 * n)], ms[int((1 + level) / 2 * n) - 1]


CPU_WHAT = (("wall", lambda x, n: x["wall"][n]), ("vCPU", lambda x, n: x["cpu"][n][1]),
            ("QEMU", lambda x, n: x["cpu"][n][0]), ("vCPU wait", lambda x, n: x["cpu"][n][2]))


def fg_effect(pairs, name):
    """Least squares over all runs of the vCPU thread's CPU time in phase
    name on [1, times put on a CPU, FG?]: (FG's coefficient, seconds per
    time put on a CPU).  A time-shared thread pays for each return to a CPU
    (cold caches: QEMU's translated code and guest memory are tens of MB),
    so the slices carry the host's share of the CPU time, and the FG
    coefficient is the difference at equal slices."""
    rows = [(1.0, x["cpu"][name][3], float(k == 0), x["cpu"][name][1])
            for pr in pairs for k, x in enumerate(pr)]
    m = [[sum(r[i] * r[j] for r in rows) for j in range(3)] for i in range(3)]
    v = [sum(r[i] * r[3] for r in rows) for i in range(3)]
    for c in range(3):                      # Gauss-Jordan, 3 x 3
        piv = max(range(c, 3), key=lambda i: abs(m[i][c]))
        if abs(m[piv][c]) < 1e-12:
            return None
        m[c], m[piv], v[c], v[piv] = m[piv], m[c], v[piv], v[c]
        for i in range(3):
            if i != c:
                f = m[i][c] / m[c][c]
                m[i] = [a - f * b for a, b in zip(m[i], m[c])]
                v[i] -= f * v[c]
    return v[2] / m[2][2], v[1] / m[1][1]


def cpu_main(kernel, rounds, nochain=False, perf=False):
    """--cpu: wall and QEMU CPU time per phase, FG vs nofgkaslr, ROUNDS
    interleaved pairs (order alternating), then cpu_summary()."""
    runs = {"nofgkaslr": [], "fg": []}
    print(f"run-time-cost --cpu: {kernel}, {rounds} pairs{', -d nochain' if nochain else ''}; "
          "seconds per phase: wall, vCPU thread on a CPU, QEMU process CPU, vCPU run-queue wait")
    for r, pair in interleaved(rounds):
        for label, app in pair:
            x = one_wall(kernel, app, nochain, perf)
            if len(x["cpu"]) != len(WALL_MARKS) + 1:
                raise SystemExit(f"run-time-cost: {kernel} {app}: QEMU's CPU times unreadable")
            runs[label].append(x)
            print(f"  {r:2} {label:10} " + "  ".join(
                f"{n} {x['wall'][n]:.2f}/{x['cpu'][n][1]:.2f}/{x['cpu'][n][0]:.2f}/{x['cpu'][n][2]:.2f}"
                for n in x["wall"]), flush=True)
    cpu_summary(runs)
    return {"nochain": nochain, "perf": perf, "runs": runs}


def cpu_summary(runs):
    """Per phase and measure: each side's median (min..max); the FG -
    nofgkaslr difference within each pair (runs[...][i] are round i's),
    median (min..max) and relative, with a bootstrap interval; and the
    first quartiles' ratio."""
    pairs = list(zip(runs["fg"], runs["nofgkaslr"]))
    print(f"per phase, medians over {len(pairs)} runs each (min..max); Δ = FG - nofgkaslr of the same "
          "pair, median (min..max) over pairs, Δ/nofgkaslr median [its 90% bootstrap interval];")
    print("fastest quarter = FG's first quartile against nofgkaslr's (the runs least slowed by the host):")
    for name in [n for n, _ in WALL_MARKS] + ["total"]:
        print(f"  {name}")
        for w, f in CPU_WHAT:
            b = [f(x, name) for _, x in pairs]
            g = [f(x, name) for x, _ in pairs]
            d = [f(fg, name) - f(nf, name) for fg, nf in pairs]
            rel = [100 * dd / f(nf, name) for dd, (_, nf) in zip(d, pairs) if f(nf, name) > 0]
            ci = ""
            if len(rel) >= 4:
                lo, hi = median_ci(rel)
                q = (statistics.quantiles(g, n=4)[0] / statistics.quantiles(b, n=4)[0] - 1) * 100
                ci = f" [90% CI {lo:+.1f}..{hi:+.1f}]; fastest quarter {q:+.1f}%"
            print(f"    {w:9} FG {spread(g)}  nofgkaslr {spread(b)}  Δ {statistics.median(d):+.3f} "
                  f"({min(d):+.3f}..{max(d):+.3f})"
                  + (f"  {statistics.median(rel):+.1f}%{ci}" if rel else ""))
    if all(len(x["cpu"]["total"]) > 3 for pr in pairs for x in pr) and len(pairs) >= 4:
        print("vCPU CPU time at equal times put on a CPU (least squares over all runs: "
              "time ~ 1 + slices + FG; interval: pairs resampled):")
        rng = random.Random(0)
        for name in [n for n, _ in WALL_MARKS] + ["total"]:
            fit = fg_effect(pairs, name)
            if fit is None:
                continue
            base = statistics.median(x["cpu"][name][1] for _, x in pairs)
            bs = sorted(e[0] for e in (fg_effect(rng.choices(pairs, k=len(pairs)), name)
                                       for _ in range(1000)) if e)
            print(f"  {name:13} FG {fit[0]:+.3f} s ({100 * fit[0] / base:+.1f}% of nofgkaslr's median "
                  f"{base:.3f} s) [90% CI {100 * bs[len(bs) // 20] / base:+.1f}.."
                  f"{100 * bs[-len(bs) // 20 - 1] / base:+.1f}%]; {1e3 * fit[1]:.2f} ms per slice, "
                  f"slices FG {statistics.median(x['cpu'][name][3] for x, _ in pairs):.0f} "
                  f"nofgkaslr {statistics.median(x['cpu'][name][3] for _, x in pairs):.0f}")
    for k, _ in JIT_FIELDS:
        vb = [x["jit"][k] for _, x in pairs if x["jit"][k] is not None]
        vf = [x["jit"][k] for x, _ in pairs if x["jit"][k] is not None]
        if vb and vf:
            print(f"  info jit {k:16} FG {statistics.median(vf):>10,.0f}  nofgkaslr {statistics.median(vb):>10,.0f}")
    if pairs and all("perf" in x for pr in pairs for x in pr):
        perf_summary(pairs)


def perf_summary(pairs, top=10):
    """--cpu --perf: per phase, the vCPU thread's perf samples as time (FG -
    nofgkaslr per pair, median and its interval), then the symbols whose
    samples differ most, summed over the pairs, as ms per run."""
    print(f"perf samples of the vCPU thread ({PERF_FREQ} Hz, cpu-clock), per phase; "
          "Δ = FG - nofgkaslr, ms per run, summed over the pairs / pairs:")
    for name in list(pairs[0][0]["perf"]):
        tot = [(sum(fg["perf"][name].values()), sum(nf["perf"][name].values())) for fg, nf in pairs]
        rel = [100 * (a / b - 1) for a, b in tot if b]
        if len(rel) < 2:
            continue
        lo, hi = median_ci(rel)
        print(f"  {name}: FG {statistics.median(a for a, _ in tot) / PERF_FREQ:.3f} s, nofgkaslr "
              f"{statistics.median(b for _, b in tot) / PERF_FREQ:.3f} s (medians), Δ median "
              f"{statistics.median(rel):+.1f}% [90% CI {lo:+.1f}..{hi:+.1f}]")
        f, n = collections.Counter(), collections.Counter()
        for fg, nf in pairs:
            f.update(fg["perf"][name])
            n.update(nf["perf"][name])
        for k in sorted(set(f) | set(n), key=lambda k: -abs(f[k] - n[k]))[:top]:
            print(f"    {k[:58]:58} {1e3 * (f[k] - n[k]) / PERF_FREQ / len(pairs):+7.1f} ms  "
                  f"(FG {1e3 * f[k] / PERF_FREQ / len(pairs):6.1f}, nofgkaslr "
                  f"{1e3 * n[k] / PERF_FREQ / len(pairs):6.1f})")


def per_ki(n, insns):
    return 1000.0 * n / insns if insns else float("nan")


def row(label, ph, phase="run"):
    p = ph[phase]
    k = p["insns"]
    return (f"  {label:14} {k:>13,} {per_ki(p['l1i_miss'], k):7.2f} {per_ki(p['l2_miss'] - p['l2_data_miss'], k):7.3f}"
            f" {per_ki(p['itlb_miss'], k):7.3f} {p['cycles']:>14,} {p['cycles'] / k:6.3f}"
            f" {per_ki(p['tb_cross_page'], k):7.1f} {ph['wall']['total']:7.1f}")


def work_table(runs):
    """Per workload: the kernel's instructions, L1i and iTLB misses per ki and
    estimated cycles, per FG seed and as the median, against nofgkaslr's
    median (and the no-FG build's), with the CPI difference."""
    base, fg, nofg = runs["nofgkaslr"], runs["fg"], runs["no-FG build"]
    cpi = lambda c: c["cycles"] / c["insns"] if c["insns"] else float("nan")  # noqa: E731
    print("per workload (kernel only; Δ = estimated cycles per kernel instruction vs nofgkaslr's median):")
    print(f"  {'workload':9} {'run':14} {'kernel insns':>13} {'L1i/ki':>7} {'iTLB/ki':>8}"
          f" {'est. cycles':>13} {'CPI':>6} {'Δ':>7}")
    for _, name, what in WORKLOADS:
        if name == "tcp" and not all(p["net"] for p in base + fg):
            print(f"  {name:9} skipped: the guest kernel has no IPv4 networking ({what})")
            continue
        bc = statistics.median(cpi(p["work"][name]) for p in base)

        def line(label, c, d=None):
            print(f"  {name:9} {label:14} {c['insns']:>13,} {per_ki(c['l1i_miss'], c['insns']):7.2f}"
                  f" {per_ki(c['itlb_miss'], c['insns']):8.3f} {c['cycles']:>13,} {cpi(c):6.3f}"
                  + (f" {d:+6.2f}%" if d is not None else ""))

        def medc(lst):
            return {f: statistics.median(p["work"][name][f] for p in lst)
                    for f in ("insns", "l1i_miss", "itlb_miss", "cycles")}

        line("nofgkaslr med", {k: int(v) for k, v in medc(base).items()})
        if nofg:
            nb = statistics.median(cpi(p["work"][name]) for p in nofg)
            line("no-FG build", {k: int(v) for k, v in medc(nofg).items()}, 100 * (nb - bc) / bc)
        ds = []
        for p in fg:
            d = 100 * (cpi(p["work"][name]) - bc) / bc
            ds.append(d)
            line(f"fg {p['seed'][:6]}", p["work"][name], d)
        print(f"  {name:9} {'FG median':14} {'':>13} {'':>7} {'':>8} {'':>13} {'':>6}"
              f" {statistics.median(ds):+6.2f}%  ({what}; {min(ds):+.2f}..{max(ds):+.2f})")

# ---- boot profile: the boot phase's work per function, FG vs nofgkaslr ----

BOOTPROF = REPO / "build" / "perf-model" / "fgk-bootprof.so"
# A second, small plugin: per translated block of the boot phase (as
# fgk-perf's: first kernel-half instruction to the first user instruction)
# its executions, the executions entered from a kernel block that ended on
# another 4 KiB page (TCG chains only within a page), the stores into a
# 4 KiB page of the kernel image that holds translated kernel code (QEMU's
# self-modifying-code check; the set of such pages only grows: an upper
# bound) and all stores into the image.  Written out and built by
# --boot-profile; fgk-perf's model is not needed for these counts.
BOOTPROF_C = r"""
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define KHALF 0xffff800000000000ULL
#define USER_LOW 0x100000ULL
#define USER_END 0x800000000000ULL
#define IMAGE_START 0xffffffff80000000ULL
#define IMAGE_END 0xffffffffc0000000ULL
#define HBITS 20

struct tb {
    uint64_t vaddr, first_page, last_page, execs, xpage, smc, textw;
    unsigned n, kernel;
    struct tb *next;
};

static struct tb *all;
static int phase;                 /* 0 before the kernel, 1 boot, 2 after */
static uint64_t prev_last_page = ~0ULL;
static char *out_path;
static uint64_t code_pg[1 << HBITS];                 /* pages with kernel code, +1 */
static uint64_t smc_pg[1 << HBITS], smc_n[1 << HBITS];

static uint64_t *slot(uint64_t *tab, uint64_t pg, int add)
{
    uint64_t h = (pg * 0x9e3779b97f4a7c15ULL) >> (64 - HBITS);
    for (;; h = (h + 1) & ((1 << HBITS) - 1)) {
        if (tab[h] == pg + 1)
            return &tab[h];
        if (!tab[h]) {
            if (!add)
                return NULL;
            tab[h] = pg + 1;
            return &tab[h];
        }
    }
}

static void tb_exec(unsigned int vcpu, void *udata)
{
    struct tb *t = udata;
    (void)vcpu;
    if (phase == 2)
        return;
    if (!t->kernel) {
        if (phase == 1 && t->vaddr >= USER_LOW && t->vaddr < USER_END)
            phase = 2;
        prev_last_page = ~0ULL;
        return;
    }
    phase = 1;
    t->execs++;
    if (prev_last_page != ~0ULL && prev_last_page != t->first_page)
        t->xpage++;
    prev_last_page = t->last_page;
}

static void mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t va, void *udata)
{
    struct tb *t = udata;
    (void)vcpu;
    /* QEMU 7.2 calls back for loads too, whatever the rw filter */
    if (phase != 1 || va < IMAGE_START || va >= IMAGE_END || !qemu_plugin_mem_is_store(info))
        return;
    t->textw++;
    if (slot(code_pg, va >> 12, 0)) {
        t->smc++;
        smc_n[slot(smc_pg, va >> 12, 1) - smc_pg]++;
    }
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    struct tb *t = calloc(1, sizeof *t);
    uint64_t end;
    (void)id;
    if (!t)
        abort();
    t->vaddr = qemu_plugin_tb_vaddr(tb);
    t->n = n;
    t->kernel = t->vaddr >= KHALF;
    end = t->vaddr;
    if (n) {
        struct qemu_plugin_insn *last = qemu_plugin_tb_get_insn(tb, n - 1);
        end = qemu_plugin_insn_vaddr(last) + qemu_plugin_insn_size(last) - 1;
    }
    t->first_page = t->vaddr >> 12;
    t->last_page = end >> 12;
    t->next = all;
    all = t;
    if (t->kernel) {
        for (uint64_t pg = t->first_page; pg <= t->last_page; pg++)
            slot(code_pg, pg, 1);
        for (size_t i = 0; i < n; i++)
            qemu_plugin_register_vcpu_mem_cb(qemu_plugin_tb_get_insn(tb, i), mem,
                                             QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_W, t);
    }
    qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS, t);
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
    FILE *f = fopen(out_path, "w");
    (void)id;
    (void)p;
    if (!f) {
        fprintf(stderr, "fgk-bootprof: %s: cannot write\n", out_path);
        return;
    }
    for (struct tb *t = all; t; t = t->next)
        if (t->execs || t->textw)
            fprintf(f, "tb %" PRIx64 " %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
                    t->vaddr, t->n, t->execs, t->xpage, t->smc, t->textw);
    for (size_t h = 0; h < (1 << HBITS); h++)
        if (smc_pg[h])
            fprintf(f, "page %" PRIx64 " %" PRIu64 "\n", (smc_pg[h] - 1) << 12, smc_n[h]);
    if (fclose(f))
        fprintf(stderr, "fgk-bootprof: %s: cannot write\n", out_path);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                           int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++)
        if (!strncmp(argv[i], "out=", 4))
            out_path = strdup(argv[i] + 4);
    if (!out_path) {
        fprintf(stderr, "fgk-bootprof: out=FILE missing\n");
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
"""

# Loops whose instruction counts follow the host's clock, not the layout
# (delay calibration, timer checks, TSC warp check, their callees; found as
# the functions whose counts vary most between nofgkaslr boots).
TIME_BOUND = frozenset({"read_current_timer", "calibrate_delay", "pit_hpet_ptimer_calibrate_cpu",
                        "setup_boot_APIC_clock", "quick_pit_calibrate", "e820__mapped_any",
                        "timer_irq_works", "delay_tsc", "check_tsc_warp", "__fentry__"})
PROF_FIELDS = ("insns", "execs", "xpage", "smc", "textw")


def build_bootprof(src=BOOTPROF_C, out=BOOTPROF):
    """Write BOOTPROF_C beside its .so and build it against QEMU 7.2's
    qemu-plugin.h (fetched by make -C perf-model); rebuilt when the source
    changed.  Returns the .so's path."""
    hdr = REPO / "build" / "qemu-plugin" / "include" / "qemu-plugin.h"
    if not hdr.is_file():
        subprocess.run(["make", "-s", "-C", str(REPO / "perf-model")], check=False)
    if not hdr.is_file():
        raise SystemExit("run-time-cost: --boot-profile: no qemu-plugin.h (make -C perf-model)")
    c = Path(out).with_suffix(".c")
    c.parent.mkdir(parents=True, exist_ok=True)
    if not (c.is_file() and c.read_text() == src and Path(out).is_file()):
        c.write_text(src)
        r = subprocess.run(["nice", "-n", "10", os.environ.get("CC", "cc"), "-O2", "-Wall", "-Wextra",
                            "-Werror", "-std=gnu11", "-fPIC", "-shared", "-fvisibility=hidden",
                            f"-I{hdr.parent}", "-o", str(out), str(c)],
                           capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(f"run-time-cost: {c}: does not build: {r.stderr.strip()}")
    return Path(out)


def parse_bootprof(text):
    """fgk-bootprof's out= file: ([(vaddr, n, execs, xpage, smc, textw)],
    {page address: stores into it counted as smc})."""
    blocks, pages = [], {}
    for ln in text.splitlines():
        f = ln.split()
        if f and f[0] == "tb" and len(f) == 7:
            blocks.append((int(f[1], 16), *map(int, f[2:])))
        elif f and f[0] == "page" and len(f) == 3:
            pages[int(f[1], 16)] = int(f[2])
    return blocks, pages


def attribute_blocks(blocks, name_of):
    """{function: {insns, execs, xpage, smc, textw}} from the blocks;
    name_of(vaddr) names the function (None: not in vmlinux)."""
    out = collections.defaultdict(lambda: dict.fromkeys(PROF_FIELDS, 0))
    for va, n, ex, xp, smc, tw in blocks:
        o = out[name_of(va) or "(not in vmlinux)"]
        for k, v in zip(PROF_FIELDS, (n * ex, ex, xp, smc, tw)):
            o[k] += v
    return dict(out)


def one_bootprof(kernel, vm, append):
    """One boot to init with fgk-bootprof: per function counts (runtime
    addresses mapped back through the seed's layout and the base offset
    from root's /proc/kallsyms), the seed, the pages written."""
    script = ("grep -E ' _text$' /proc/kallsyms\n"
              "echo seed=$(cat /proc/fgkaslr_seed 2>/dev/null)\necho boot-profile-done\n")
    with tempfile.TemporaryDirectory(prefix="fgk-bootprof.") as d:
        out = Path(d) / "prof.txt"
        g = fgkrun.Guest("boot", script, kernel=Path(kernel) / "bzImage", kaslr=True, timeout=900,
                         append="kunit.enable=0 " + append,
                         extra_qemu_args=["-plugin", f"{BOOTPROF},out={out}"])
        g.start()
        share_autogroup_nice(g.proc.pid)
        try:
            res = g.wait()
        finally:
            g.kill()
        if "boot-profile-done" not in res.output or not out.is_file():
            raise SystemExit(f"run-time-cost: {kernel} {append}: guest failed ({res.message})")
        blocks, pages = parse_bootprof(out.read_text())
    check_seed(kernel, append, res.output)
    m = re.search(r"^([0-9a-f]{16}) [Tt] _text\s*$", res.output, re.M)
    if not m:
        raise SystemExit(f"run-time-cost: {kernel} {append}: no _text in the guest's kallsyms")
    offset = int(m.group(1), 16) - vm.symbol("_text").addr
    s = re.search(r"fgkaslr_seed=([0-9a-f]{64})", append)
    lay = vm.layout(s.group(1)) if s else None
    names = {}

    def name_of(va):
        try:
            link = lay.link(va, offset) if lay else (va - offset) & 0xFFFFFFFFFFFFFFFF
            if link not in names:
                names[link] = vm.symbol_at(link).name
            return names[link]
        except libfgk.FgkError:
            return None
    return {"append": append, "functions": attribute_blocks(blocks, name_of),
            "smc_pages": len(pages)}


def prof_totals(run, exclude=frozenset()):
    return {k: sum(f[k] for n, f in run["functions"].items() if n not in exclude)
            for k in PROF_FIELDS}


def boot_profile_summary(pairs, top=12):
    """Per pair and as medians: FG - nofgkaslr in instructions (all, and
    without TIME_BOUND's loops), block executions, cross-page entries and
    stores into code pages; then the functions with the largest median
    difference in cross-page entries and in instructions."""
    print("boot phase, per pair (nofgkaslr -> FG): kernel instructions, without the time-bound loops;"
          " TB entries from another page; stores into pages holding translated code (pages)")
    d_ins, d_xp, d_smc = [], [], []
    for i, (fg, nf) in enumerate(pairs):
        a, b = prof_totals(nf), prof_totals(fg)
        ar, br = prof_totals(nf, TIME_BOUND), prof_totals(fg, TIME_BOUND)
        d_ins.append(100 * (br["insns"] / ar["insns"] - 1))
        d_xp.append(br["xpage"] - ar["xpage"])
        d_smc.append(br["smc"] - ar["smc"])
        print(f"  {i:2} insns {a['insns'] / 1e6:7.1f} -> {b['insns'] / 1e6:7.1f} M, without time-bound "
              f"{ar['insns'] / 1e6:7.2f} -> {br['insns'] / 1e6:7.2f} M ({d_ins[-1]:+.2f}%); "
              f"xpage {ar['xpage'] / 1e6:.2f} -> {br['xpage'] / 1e6:.2f} M; stores into code pages "
              f"{a['smc']:,} -> {b['smc']:,} ({nf['smc_pages']} -> {fg['smc_pages']} pages)")
    print(f"  median over {len(pairs)} pairs: instructions without the time-bound loops "
          f"{statistics.median(d_ins):+.2f}% ({min(d_ins):+.2f}..{max(d_ins):+.2f}); TB entries from "
          f"another page {statistics.median(d_xp) / 1e6:+.2f} M ({min(d_xp) / 1e6:+.2f}.."
          f"{max(d_xp) / 1e6:+.2f}); stores into code pages {statistics.median(d_smc):+,.0f}")
    names = set().union(*(set(fg["functions"]) | set(nf["functions"]) for fg, nf in pairs))
    zero = dict.fromkeys(PROF_FIELDS, 0)

    def med(n, k, side):
        return statistics.median(p[side]["functions"].get(n, zero)[k] for p in
                                 ({"fg": fg, "nf": nf} for fg, nf in pairs))
    for k, what in (("xpage", "TB entries from another page"), ("insns", "instructions")):
        rows = sorted(((med(n, k, "fg") - med(n, k, "nf"), n) for n in names
                       if n not in TIME_BOUND), key=lambda r: -abs(r[0]))[:top]
        print(f"  functions by median FG - nofgkaslr {what} (time-bound loops left out):")
        for dv, n in rows:
            print(f"    {n:40} {med(n, k, 'nf'):>13,.0f} -> {med(n, k, 'fg'):>13,.0f}  {dv:+13,.0f}"
                  f"   executions {med(n, 'execs', 'nf'):,.0f} -> {med(n, 'execs', 'fg'):,.0f}")


def boot_profile_main(kernel, npairs, jpath=None):
    """--boot-profile: npairs interleaved boots (nofgkaslr, a random seed)
    with fgk-bootprof, then boot_profile_summary()."""
    build_bootprof()
    if not (Path(kernel) / "vmlinux").is_file():
        raise SystemExit(f"run-time-cost: {kernel}: no vmlinux to name the functions")
    pairs = []
    with libfgk.Vmlinux(Path(kernel) / "vmlinux") as vm:
        for r, pair in interleaved(npairs, "nf"):
            got = {}
            for label, app in pair:
                got[label] = one_bootprof(kernel, vm, app)
                t = prof_totals(got[label])
                print(f"  {r:2} {label} insns {t['insns']:,} xpage {t['xpage']:,} smc {t['smc']:,}",
                      flush=True)
            pairs.append((got["fg"], got["nf"]))
            if jpath:
                Path(jpath).write_text(json.dumps({"kernel": str(kernel), "pairs": pairs}))
    boot_profile_summary(pairs)
    return pairs


def console_stamps(log):
    """{message with its numbers masked: first printk time, s} of a console log."""
    out = {}
    for ln in log.splitlines():
        m = re.search(r"\[\s*(\d+\.\d+)\] (.*)", ln)
        if m:
            out.setdefault(re.sub(r"0x[0-9a-f]+|\d+", "N", m.group(2))[:70], float(m.group(1)))
    return out


def console_summary(pairs, top=8):
    """Per interval between consecutive console messages that every run
    printed: FG - nofgkaslr of the same pair on the guest's clock (printk
    times), median and sorted differences; the largest first."""
    common = set.intersection(*(set(fg) & set(nf) for fg, nf in pairs))
    order = sorted(common, key=lambda m: statistics.median(nf[m] for _, nf in pairs))
    rows = []
    for prev, m in zip(order, order[1:]):
        d = sorted((fg[m] - fg[prev]) - (nf[m] - nf[prev]) for fg, nf in pairs)
        rows.append((statistics.median(d), prev, m, statistics.median(nf[m] - nf[prev] for _, nf in pairs), d))
    print(f"console intervals (guest clock), FG - nofgkaslr over {len(pairs)} pairs: median "
          "[sorted differences], ms")
    for dm, prev, m, base, d in sorted(rows, key=lambda r: -abs(r[0]))[:top]:
        lo, hi = median_ci(d)
        print(f"  {1e3 * dm:+7.1f} ms [90% CI {1e3 * lo:+.1f}..{1e3 * hi:+.1f}] of nofgkaslr's "
              f"{1e3 * base:.1f} ms, {sum(x > 0 for x in d)}/{len(d)} positive: {prev[:45]!r} -> {m[:45]!r}")
    for key in ("Run /init as init process",):
        if key in common:
            d = [fg[key] - nf[key] for fg, nf in pairs]
            print(f"  at {key!r}: {1e3 * statistics.median(d):+.1f} ms "
                  f"({1e3 * min(d):+.1f}..{1e3 * max(d):+.1f})")


def console_main(kernel, npairs, jpath=None):
    """--console-times: npairs interleaved boots (order alternating) of
    boot + an empty script with initcall_debug, no plugin; the console's
    printk times, then console_summary()."""
    pairs = []
    for r, pair in interleaved(npairs, "nf"):
        got = {}
        for label, app in pair:
            g = fgkrun.Guest("boot", "echo console-times-done", kernel=Path(kernel) / "bzImage",
                             kaslr=True, timeout=600,
                             append=f"kunit.enable=0 earlyprintk=ttyS0 initcall_debug {app}")
            g.start()
            share_autogroup_nice(g.proc.pid)
            try:
                res = g.wait()
            finally:
                g.kill()
            if "console-times-done" not in res.output:
                raise SystemExit(f"run-time-cost: {kernel} {app}: guest failed ({res.message})")
            got[label] = console_stamps(res.log)
        pairs.append((got["fg"], got["nf"]))
        print(f"  {r:2} pair done", flush=True)
        if jpath:
            Path(jpath).write_text(json.dumps({"kernel": str(kernel), "pairs": pairs}))
    console_summary(pairs)
    return pairs


SMCBENCH = REPO / "build" / "perf-model" / "fgk-smcbench"
# A guest program (static): what a store costs under TCG when its page
# holds translated code (QEMU checks it for self-modifying code) against a
# store into a page without code, never overlapping the code itself; the
# first stores into a page are dearer (no bitmap of the page's code yet).
SMCBENCH_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static double loop(volatile unsigned char *a, long n)
{
    double t0 = now();
    for (long i = 0; i < n; i++)
        a[(i * 8) & 1023] = (unsigned char)i;
    return now() - t0;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    int rounds = argc > 2 ? atoi(argv[2]) : 7;
    unsigned char *p = mmap(0, 2 * 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    double best_code = 1e9, best_data = 1e9;
    void (*f)(void) = (void (*)(void))p;

    if (p == MAP_FAILED)
        return 1;
    p[4096] = 1;
    p[0] = 0xc3;                                  /* ret */
    for (int r = 0; r < rounds; r++) {
        double c, d;
        f();                                      /* page 0 holds translated code */
        c = loop(p + 2048, n);
        d = loop(p + 4096 + 2048, n);
        best_code = c < best_code ? c : best_code;
        best_data = d < best_data ? d : best_data;
    }
    for (int w = 1; w <= 16; w *= 4)
        for (int code = 0; code <= 1; code++) {
            double best = 1e9;
            for (int r = 0; r < rounds; r++) {
                int np = 256;
                unsigned char *q = mmap(0, np * 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                double t0, t;
                if (q == MAP_FAILED)
                    return 1;
                for (int i = 0; i < np * 8; i++)
                    q[i * 512] = 0xc3;
                for (int i = 0; i < np * 8 && code; i++)
                    ((void (*)(void))(q + i * 512))();
                t0 = now();
                for (int i = 0; i < np; i++)
                    for (int k = 0; k < w; k++)
                        ((volatile unsigned char *)q)[i * 4096 + 16 + 8 * k] = 1;
                t = (now() - t0) / (np * w);
                best = t < best ? t : best;
                munmap(q, np * 4096);
            }
            printf("smc-price: first %d store(s) into each of 256 fresh pages %s: %.1f ns/store\n",
                   w, code ? "with 8 translated blocks" : "without code", best * 1e9);
        }
    printf("smc-price: %ld stores: page with code %.1f ns/store, page without %.1f ns/store\n",
           n, best_code / n * 1e9, best_data / n * 1e9);
    return 0;
}
"""


def smc_price_main(kernel, repeat=2):
    """--smc-price: SMCBENCH_C (built static into build/perf-model/) in a
    guest of kernel (nofgkaslr), `repeat` times; prints its lines."""
    c = SMCBENCH.with_suffix(".c")
    c.parent.mkdir(parents=True, exist_ok=True)
    if not (c.is_file() and c.read_text() == SMCBENCH_C and SMCBENCH.is_file()):
        c.write_text(SMCBENCH_C)
        r = subprocess.run(["nice", "-n", "10", os.environ.get("CC", "cc"), "-O2", "-static", "-Wall",
                            "-Werror", "-o", str(SMCBENCH), str(c)], capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(f"run-time-cost: {c}: does not build: {r.stderr.strip()}")
    g = fgkrun.Guest("boot", f"for i in $(seq {repeat}); do /fgk/smcbench 200000 7; done",
                     kernel=Path(kernel) / "bzImage", kaslr=True, timeout=600,
                     append="kunit.enable=0 nofgkaslr", files={"/fgk/smcbench": str(SMCBENCH)})
    g.start()
    share_autogroup_nice(g.proc.pid)
    try:
        res = g.wait()
    finally:
        g.kill()
    lines = re.findall(r"^smc-price: .*$", res.output, re.M)
    if not lines:
        raise SystemExit(f"run-time-cost: {kernel}: smcbench printed nothing ({res.message})")
    print("\n".join(lines))
    return lines


# ---- remedies: trace-driven replay of one workload under other layouts ----

REPLAY = REPO / "build" / "perf-model" / "fgk-replay"


def log2_fact(n):
    return math.lgamma(n + 1) / math.log(2)


def replay(trace, mapfile=None, lines=None, sets=None, hot=None, warm=True, pairs=None):
    """fgk-replay's counters; warm: caches as the trace leaves them (--warm)."""
    cmd = [str(REPLAY)] + (["--warm"] if warm else [])
    for opt, v in (("--map", mapfile), ("--lines", lines), ("--sets", sets), ("--hot", hot),
                   ("--pairs", pairs)):
        if v:
            cmd += [opt, str(v)]
    r = subprocess.run(["nice", "-n", "10", *cmd, str(trace)], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"run-time-cost: {r.stderr.strip()}")
    return {k: int(v) for k, v in (x.split("=", 1) for x in r.stdout.split())}


class Text:
    """The .text.* sections of a vmlinux in link order, where their
    functions' .cold parts are, which object file each came from, and
    layouts of them: the real algorithm's (libfgk) or a remedy's order
    packed by the same placement rule (docs/layout-spec.md section 7)."""

    def __init__(self, kernel):
        self.vm = libfgk.Vmlinux(Path(kernel) / "vmlinux")
        lay = self.vm.layout(libfgk.random_seed())
        # the .text.* domain: its packing starts at lay.start (a layout
        # version 2 vmlinux also shuffles .sched.text.<object> sections,
        # apart and below it; they are not modelled here)
        self.secs = sorted((s for s in lay.sections if s.name.startswith(".text.")),
                           key=lambda s: s.addr)
        self.start = lay.start
        self.starts = [s.addr for s in self.secs]
        # X.cold: GCC's cold part of X, in the main .text (not randomized)
        cold = self.vm.symbols([s.name[len(".text."):] + ".cold" for s in self.secs])
        self.cold = {i: cold[s.name[len(".text."):] + ".cold"] for i, s in enumerate(self.secs)
                     if s.name[len(".text."):] + ".cold" in cold}
        self.objs = self._objects(Path(kernel))

    def _objects(self, kernel):
        """Section position -> object file (the first, in link order, that has
        a section of that name: the linker merges same-named input sections),
        from the build tree's vmlinux.a (read through libfgk); None without it."""
        tree = kernel / "build"
        if not (tree / "vmlinux.a").is_file():
            return None
        r = subprocess.run(["ar", "t", str(tree / "vmlinux.a")], capture_output=True, text=True)
        if r.returncode:
            return None
        owner = {}
        for o in r.stdout.split():
            path = Path(o) if o.startswith("/") else tree / o
            with libfgk.Vmlinux(path) as v:
                for s in v.sections():
                    if s.name.startswith(".text."):
                        owner.setdefault(s.name, str(path.relative_to(tree)) if
                                         path.is_relative_to(tree) else o)
        # .text.<object path> (kernel series patch 29, 6.1: 28): an object's
        # plain .text, named after the object, not a function
        return [owner.get(s.name) or (s.name[len(".text."):] if "/" in s.name
                                      and s.name.endswith(".o") else "?")
                for s in self.secs]

    def real(self, seed):
        """The kernel's own layout for seed: {position: new address}."""
        pos = {s.index: i for i, s in enumerate(self.secs)}
        return {pos[s.index]: s.new_addr for s in self.vm.layout(seed).sections
                if s.index in pos}

    def pack(self, order, cold_with=False):
        """Positions in `order` placed from start, each at its alignment;
        cold_with: each function's .cold part right after it.  Returns
        ({position: new address}, {position: new address of its .cold})."""
        p, new, newcold = self.start, {}, {}
        for i in order:
            s = self.secs[i]
            p = -(-p // s.align) * s.align
            new[i] = p
            p += s.size
            if cold_with and i in self.cold:
                newcold[i] = p
                p += self.cold[i].size
        return new, newcold

    def write_map(self, path, new, newcold, offset, inverse=False, frm=None):
        """fgk-replay's --map from link order (or the layout frm) to `new`
        (inverse: back)."""
        with open(path, "w") as f:
            for i, a in new.items():
                s = self.secs[i]
                old = frm[i] if frm else s.addr
                if a != old:
                    x, y = (a, old) if inverse else (old, a)
                    f.write(f"{x + offset:x} {x + s.size + offset:x} {y + offset:x}\n")
            for i, a in newcold.items():
                c = self.cold[i]
                f.write(f"{c.addr + offset:x} {c.addr + c.size + offset:x} {a + offset:x}\n")

    def section_of(self, link):
        i = bisect.bisect_right(self.starts, link) - 1
        if i >= 0 and link < self.secs[i].addr + self.secs[i].size:
            return i
        return None


def fetched_sections(text, lines_file, offset):
    """{position: misses} of the randomized sections whose lines a replay's
    --lines file names (a cold-started replay misses every fetched line at
    least once, so its lines are the trace's footprint)."""
    out = collections.Counter()
    for ln in Path(lines_file).read_text().splitlines():
        a, n, _ = ln.split()
        i = text.section_of(int(a, 16) - offset)
        if i is not None:
            out[i] += int(n)
    return out


def remedy_orders(text, hot, rng, group):
    """One random draw of each remedy: name -> (order, cold_with)."""
    n = len(text.secs)

    def shuffled(units):
        units = list(units)
        rng.shuffle(units)
        return [i for u in units for i in u]

    runs = [list(range(k, min(k + group, n))) for k in range(0, n, group)]
    out = {f"runs of {group} (link order inside)": (shuffled(runs), False)}
    if text.objs:
        by = collections.OrderedDict()
        for i, o in enumerate(text.objs):
            by.setdefault(o, []).append(i)
        out["by object file"] = (shuffled(by.values()), False)
    out["X.cold next to X"] = (shuffled([i] for i in range(n)), True)
    hotl = [[i] for i in range(n) if i in hot]
    cold = [[i] for i in range(n) if i not in hot]
    out["hot set packed"] = (shuffled(hotl) + shuffled(cold), False)
    return out


def entropies(text, hot, group):
    n = len(text.secs)
    e = {f"runs of {group} (link order inside)": log2_fact(-(-n // group))}
    if text.objs:
        e["by object file"] = log2_fact(len(set(text.objs)))
    e["X.cold next to X"] = log2_fact(n)
    e["hot set packed"] = log2_fact(len(hot)) + log2_fact(n - len(hot))
    return e


def line_sets(text, footprint, offset, new, hot_n):
    """{set: [(position or None, misses)]} of the footprint's hot lines (in
    hot_n block executions or more) under the layout new ({position: new
    link address}; missing: not moved)."""
    out = collections.defaultdict(list)
    for ln in Path(footprint).read_text().splitlines():
        a, n, f = ln.split()
        if int(f) < hot_n:
            continue
        a = int(a, 16)
        i = text.section_of(a - offset)
        moved = a if i is None else a - text.secs[i].addr - offset + new.get(i, text.secs[i].addr) + offset
        out[(moved >> 6) & 63].append((i, int(n)))
    return out


def remedies_main(kernel, workload, draws, groups, rseed, jpath=None, stream="link"):
    """Trace `workload` once in link order (nofgkaslr) and once with a real
    seed, check the replay against the plugin, then replay the link-order
    trace (stream "seed": the seed run's) under draws of every layout and
    print cost against entropy."""
    if not REPLAY.is_file():
        subprocess.run(["make", "-s", "-C", str(REPO / "perf-model")], check=True)
    t0 = time.monotonic()
    link = capture(kernel, workload, "nofgkaslr", "nofgkaslr")
    fg = capture(kernel, workload, "fg", f"fgkaslr_seed={libfgk.random_seed()}")
    tl, tf = TRACES / f"{workload}-nofgkaslr.trc", TRACES / f"{workload}-fg.trc"
    off = link["offset"]
    text = Text(kernel)
    work = TRACES / "replay"
    work.mkdir(exist_ok=True)
    cpi = lambda c: c["cycles"] / c["insns"]  # noqa: E731
    l1k = lambda c: per_ki(c["l1i_miss"], c["insns"])  # noqa: E731
    foot = work / f"{workload}-link.lines"
    # hot lines: fetched in at least half as many block executions as the
    # workload has iterations (a line of every iteration's path)
    count = [x.split()[2] for x in WORKLOAD.splitlines() if x.startswith(f"$W {workload} ")]
    hot_n = max(int(count[0]) // 2, 1) if count else 100
    replay(tl, lines=foot, warm=False)   # every fetched line, with its fetch count
    base = replay(tl, lines=work / f"{workload}-link.misses", sets=work / f"{workload}-link.sets",
                  hot=hot_n)
    print(f"remedies: {workload}, {kernel}; trace {tl.stat().st_size >> 20} MiB, "
          f"{base['insns']:,} kernel instructions, {base['blocks']:,} blocks; "
          f"{len(text.secs)} randomized sections")
    print("check: the replay (fgk-replay --warm: caches as the trace leaves them) against the plugin:")

    def cmp(what, rep, plug):
        print(f"  {what:44} insns {rep['insns']:>11,} vs {plug['insns']:>11,}; L1i/ki {l1k(rep):6.2f} vs "
              f"{l1k(plug):6.2f}; CPI {cpi(rep):.4f} vs {cpi(plug):.4f} ({100 * (cpi(rep) - cpi(plug)) / cpi(plug):+.2f}%)")

    cmp("link order: its trace, replayed as is", base, link["plugin"])
    own = replay(tf)
    cmp("seed run: its trace, replayed as is", own, fg["plugin"])
    m = work / f"{workload}-fgseed.map"
    text.write_map(m, text.real(fg["seed"]), {}, off)
    moved = replay(tl, m)
    cmp("link-order trace under the seed's layout", moved, fg["plugin"])
    text.write_map(m, text.real(fg["seed"]), {}, fg["offset"], inverse=True)
    back = replay(tf, m)
    cmp("seed run's trace under link order", back, link["plugin"])
    print("  (the last two rows: each run's stream under the other's layout, the seed's computed by\n"
          "   libfgk; the streams differ by TCG timing: wake-ups, idle, interrupts)")
    print(f"  FG seed run vs link-order run, plugin: CPI {100 * (cpi(fg['plugin']) - cpi(link['plugin'])) / cpi(link['plugin']):+.2f}%;"
          f" replay of one stream under both layouts: {100 * (cpi(moved) - cpi(base)) / cpi(base):+.2f}% "
          f"(the link-order run's), {100 * (cpi(own) - cpi(back)) / cpi(back):+.2f}% (the seed run's)")

    real = text.real(fg["seed"])
    packed, _ = text.pack(sorted(real, key=real.get))
    linkp, _ = text.pack(range(len(text.secs)))
    print(f"  the remedies' packer: the seed's order packed = libfgk's layout: {packed == real}; "
          f"link order packed = the link addresses: {all(linkp[i] == s.addr for i, s in enumerate(text.secs))}"
          f"; {len(text.cold)} functions have a .cold part, "
          f"{len(set(text.objs)) if text.objs else 'no'} object files")
    hot = fetched_sections(text, foot, off)
    rng = random.Random(rseed)
    frm = None
    if stream == "seed":   # the seed run's trace, moved from its layout
        frm, tl, off = text.real(fg["seed"]), tf, fg["offset"]
        text.write_map(work / f"{workload}-tolink.map", {i: s.addr for i, s in enumerate(text.secs)},
                       {}, off, frm=frm)
        base = replay(tl, work / f"{workload}-tolink.map")
        print(f"  stream: the seed run's trace ({base['insns']:,} kernel instructions), its link-order "
              f"L1i/ki {l1k(base):.2f}")
    n = len(text.secs)
    results = collections.defaultdict(list)
    ent = {"link order (nofgkaslr)": 0.0, "full shuffle (libfgk, real seeds)": log2_fact(n)}
    results["link order (nofgkaslr)"].append(base)
    full_files = []
    for d in range(draws):
        seed = f"{rng.getrandbits(256):064x}"
        mp, li, se = (work / f"{workload}-full{d}.{x}" for x in ("map", "lines", "sets"))
        new = text.real(seed)
        text.write_map(mp, new, {}, off, frm=frm)
        r = replay(tl, mp, li, se, hot_n)
        r["seed"] = seed
        results["full shuffle (libfgk, real seeds)"].append(r)
        full_files.append((r, new, li, se))
        for g in groups:
            for name, (order, cw) in remedy_orders(text, hot, rng, g).items():
                if name in ent and not name.startswith("runs of"):
                    if g != groups[0]:
                        continue
                ent.update({k: v for k, v in entropies(text, hot, g).items() if k == name})
                new, newcold = text.pack(order, cw)
                text.write_map(mp, new, newcold, off, frm=frm)
                results[name].append(replay(tl, mp))
        print(f"  draw {d + 1}/{draws} done ({time.monotonic() - t0:.0f} s)", flush=True)

    bc = cpi(base)
    print(f"cost against entropy ({workload}; Δ = estimated kernel cycles per instruction vs link "
          f"order, replayed; {draws} draws each (random.Random({rseed})); hot set = the {len(hot)} "
          f"sections this trace fetches, i.e. an oracle profile):")
    print(f"  {'layout':40} {'entropy bits':>12} {'L1i/ki':>7} {'Δ median':>9} {'min..max':>17} {'> 1%':>5}")
    table = []
    for name in sorted(results, key=lambda k: ent[k]):
        rs = results[name]
        ds = [100 * (cpi(r) - bc) / bc for r in rs]
        l1 = statistics.median(l1k(r) for r in rs)
        row_ = {"layout": name, "entropy_bits": ent[name], "l1i_per_ki": l1,
                "delta_median": statistics.median(ds), "delta_min": min(ds), "delta_max": max(ds),
                "over_1pct": sum(d > 1 for d in ds), "draws": len(ds)}
        table.append(row_)
        print(f"  {name:40} {ent[name]:12,.0f} {l1:7.2f} {statistics.median(ds):+8.2f}% "
              f"{min(ds):+7.2f}..{max(ds):+7.2f}% {sum(d > 1 for d in ds):>2}/{len(ds)}")

    if stream == "seed":
        print("remedies: the cause analysis reads link-order addresses: with --stream link only")
        return 0
    # cause: the worst full-shuffle draw against link order
    worst = max(full_files, key=lambda x: cpi(x[0]))
    r, new, li, se = worst
    print(f"hot lines: fetched in >= {hot_n:,} block executions (half the workload's iterations)")
    print(f"cause: the worst of {draws} real layouts (seed {r['seed'][:16]}…, "
          f"Δ {100 * (cpi(r) - bc) / bc:+.2f}%, L1i/ki {l1k(r):.2f} vs {l1k(base):.2f}):")
    mb, mw = fetched_sections(text, work / f"{workload}-link.misses", off), fetched_sections(text, li, off)
    extra = sorted(set(mb) | set(mw), key=lambda i: mb.get(i, 0) - mw.get(i, 0))
    print("  functions with the most extra L1i misses (worst layout vs link order):")
    for i in extra[:12]:
        s = text.secs[i]
        print(f"    {s.name[len('.text.'):]:40} {mw.get(i, 0):>8,} vs {mb.get(i, 0):>8,}  "
              f"size {s.size:>5}  set {((new[i]) >> 6) & 63:>2}..{((new[i] + s.size - 1) >> 6) & 63:<2} "
              f"(link order {((s.addr) >> 6) & 63}..{((s.addr + s.size - 1) >> 6) & 63})")

    # caller/callee (and return) pairs: the misses of the blocks each
    # function-to-function transition leads into, worst layout vs link order
    def fn_pairs(mapfile, path):
        replay(tl, mapfile, pairs=path)
        names, out = {}, collections.Counter()

        def fn(a):
            if a not in names:
                try:
                    names[a] = text.vm.symbol_at(a - off).name
                except libfgk.FgkError:
                    names[a] = "?"
            return names[a]
        for ln in Path(path).read_text().splitlines():
            f, t, n = ln.split()
            f, t = int(f, 16), int(t, 16)
            a, b = ("(start)" if f == 2 ** 64 - 1 else fn(f)), fn(t)
            if a != b:
                out[a, b] += int(n)
        return out
    worst_map = work / f"{workload}-worst.map"
    text.write_map(worst_map, new, {}, off)
    pw = fn_pairs(worst_map, work / f"{workload}-worst.pairs")
    pb = fn_pairs(None, work / f"{workload}-link.pairs")
    print("  transitions between functions leading into missing code (misses, worst layout vs link order):")
    for (a, b), nw in sorted(pw.items(), key=lambda x: pb.get(x[0], 0) - x[1])[:10]:
        print(f"    {a:>32} -> {b:<32} {nw:>8,} vs {pb.get((a, b), 0):>8,}")

    def setrows(path):
        return [tuple(map(int, ln.split())) for ln in Path(path).read_text().splitlines()]

    for label, path in (("link order", work / f"{workload}-link.sets"), ("worst layout", se)):
        rows_ = setrows(path)
        over = [x for x in rows_ if x[1] > 8]
        tot = sum(x[2] for x in rows_)
        print(f"  {label}: {len(over)} of 64 L1i sets have more than 8 hot lines; they take "
              f"{100 * sum(x[2] for x in over) / tot:.0f}% of the misses; lines per set "
              f"{min(x[1] for x in rows_)}..{max(x[1] for x in rows_)}")
    # conflict: hot lines beyond a set's 8 ways, summed over the sets, per real layout
    over8 = lambda path: sum(max(0, x[1] - 8) for x in setrows(path))  # noqa: E731
    pairs = sorted((100 * (cpi(x[0]) - bc) / bc, over8(x[3])) for x in full_files)
    print(f"  hot lines beyond 8 ways (summed over sets): link order {over8(work / f'{workload}-link.sets')}; "
          "real layouts (Δ, lines): " + ", ".join(f"{d:+.1f}% {o}" for d, o in pairs))
    if len(pairs) > 2 and len({o for _, o in pairs}) > 1:
        print(f"  correlation of Δ with those lines over the real layouts: "
              f"r = {statistics.correlation([d for d, _ in pairs], [o for _, o in pairs]):.2f}")
    top = sorted(setrows(se), key=lambda x: -x[2])[:4]
    ls = line_sets(text, foot, off, new, hot_n)
    for k, nlines, miss in top:
        fs = collections.Counter()
        for i, _ in ls[k]:
            fs[text.secs[i].name[len(".text."):] if i is not None else "(not randomized)"] += 1
        print(f"    set {k:2}: {nlines} hot lines, {miss:,} misses; hot lines of: "
              + ", ".join(f"{f} ({c})" for f, c in fs.most_common(8)))
    if jpath:
        Path(jpath).write_text(json.dumps({"workload": workload, "check": {
            "link_plugin": link["plugin"], "link_replay": base, "seed_plugin": fg["plugin"],
            "seed_replay": own, "link_trace_seed_layout": moved, "seed_trace_link_layout": back,
            "seed": fg["seed"]},
            "table": table}, indent=1))
    print(f"remedies: {time.monotonic() - t0:.0f} s")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("seeds", nargs="?", type=int, default=5)
    ap.add_argument("--kernel", default=str(REPO / "build" / "kernel"))
    ap.add_argument("--nofg", default=None)
    ap.add_argument("--text-page", default="2M", choices=("2M", "4K"))
    ap.add_argument("--json", help="also write every run's counters here")
    ap.add_argument("--wall", type=int, metavar="ROUNDS",
                    help="wall-clock phases of FG vs nofgkaslr, no plugin (see above)")
    ap.add_argument("--cpu", type=int, metavar="ROUNDS",
                    help="wall and QEMU CPU time per phase of FG vs nofgkaslr, no plugin (see above)")
    ap.add_argument("--nochain", action="store_true",
                    help="--cpu: run QEMU with -d nochain (no TB chaining: every jump via the main loop)")
    ap.add_argument("--perf", action="store_true",
                    help="--cpu: also sample QEMU's vCPU thread with perf (cpu-clock) per phase")
    ap.add_argument("--cpu-report", nargs="+", metavar="JSON",
                    help="--cpu's summary again from the --json files of earlier --cpu runs, pooled")
    ap.add_argument("--boot-profile", type=int, metavar="PAIRS",
                    help="the boot phase per function, FG vs nofgkaslr (fgk-bootprof; see above)")
    ap.add_argument("--console-times", type=int, metavar="PAIRS",
                    help="FG - nofgkaslr per interval between console messages (guest clock)")
    ap.add_argument("--smc-price", action="store_true",
                    help="what a store into a page holding translated code costs (guest program)")
    ap.add_argument("--remedies", metavar="WORKLOAD",
                    help="trace WORKLOAD and replay it under remedy layouts (see docs)")
    ap.add_argument("--draws", type=int, default=8, help="--remedies: layouts drawn per remedy")
    ap.add_argument("--groups", default="4,16,64", help="--remedies: run lengths to shuffle")
    ap.add_argument("--remedy-seed", type=int, default=1, help="--remedies: the draws' RNG seed")
    ap.add_argument("--stream", choices=("link", "seed"), default="link",
                    help="--remedies: replay the link-order run's trace or the seed run's")
    a = ap.parse_args()
    if a.remedies:
        if a.remedies not in [name for _, name, _ in WORKLOADS]:
            ap.error(f"--remedies {a.remedies}: not a workload ({', '.join(n for _, n, _ in WORKLOADS)})")
        return remedies_main(Path(a.kernel), a.remedies, a.draws,
                             [int(x) for x in a.groups.split(",")], a.remedy_seed, a.json, a.stream)
    if a.smc_price:
        smc_price_main(Path(a.kernel))
        return 0
    if a.console_times:
        console_main(Path(a.kernel), a.console_times, a.json)
        return 0
    if a.boot_profile:
        boot_profile_main(Path(a.kernel), a.boot_profile, a.json)
        return 0
    if a.cpu_report:
        runs = {"nofgkaslr": [], "fg": []}
        kinds = set()
        for f in a.cpu_report:
            try:
                d = json.loads(Path(f).read_text())
                kinds.add(d["nochain"])
                for k in runs:
                    runs[k] += d["runs"][k]
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise SystemExit(f"run-time-cost: {f}: not a --cpu --json file ({e})")
        if len(kinds) > 1:
            raise SystemExit("run-time-cost: --cpu-report: files with and without --nochain mixed")
        cpu_summary(runs)
        return 0
    if a.cpu:
        if a.perf and not shutil.which("perf"):
            raise SystemExit("run-time-cost: --perf: no perf (apt-get install linux-perf)")
        runs = cpu_main(Path(a.kernel), a.cpu, a.nochain, a.perf)
        if a.json:
            Path(a.json).write_text(json.dumps(runs, indent=1))
        return 0
    if a.wall:
        runs = wall_main(Path(a.kernel), a.wall)
        if a.json:
            Path(a.json).write_text(json.dumps(runs, indent=1))
        return 0
    if not (REPO / "build" / "qemu-plugin" / "include" / "qemu-plugin.h").is_file() or \
            not PLUGIN.is_file() or not WORK.is_file():
        r = subprocess.run(["make", "-s", "-C", str(REPO / "perf-model")])
        if r.returncode:
            print("run-time-cost: skipped: the fgk-perf plugin does not build (make -C perf-model)")
            return 0
    kernel = Path(a.kernel)
    if not (kernel / "bzImage").is_file():
        print(f"run-time-cost: skipped: no kernel at {kernel} (make kernel)")
        return 0
    nofg = Path(a.nofg) if a.nofg else (REPO / "build" / f"{kernel.name}-nofg")
    nofg = nofg if (nofg / "bzImage").is_file() else None
    seeds = [libfgk.random_seed() for _ in range(a.seeds)]   # 64 hex digits (the kernel ignores any other fgkaslr_seed=)
    runs = {"nofgkaslr": [], "fg": [], "no-FG build": []}
    hdr = (f"  {'run':14} {'kernel insns':>13} {'L1i/ki':>7} {'L2i/ki':>7} {'iTLB/ki':>7}"
           f" {'est. cycles':>14} {'CPI':>6} {'xpg/ki':>7} {'wall s':>7}")
    print(f"run-time-cost: {kernel}, text pages {a.text_page}, {len(seeds)} seeds"
          f"{', no-FG build ' + str(nofg) if nofg else ' (no build without FG_KASLR)'}")
    print("phase 'run' (init's workload; after the first user instruction):")
    print(hdr)
    for s in seeds:   # interleaved: nofgkaslr, fg seed, nofg build
        for label, k, app in (("nofgkaslr", kernel, "nofgkaslr"),
                              ("fg", kernel, f"fgkaslr_seed={s}"),
                              ("no-FG build", nofg, "")):
            if k is None:
                continue
            ph = one(k, app, a.text_page)
            ph["seed"] = s if label == "fg" else None
            runs[label].append(ph)
            if a.json:
                Path(a.json).write_text(json.dumps(runs, indent=1))
            print(row(f"{label} {s[:6]}" if label == "fg" else label, ph), flush=True)

    def med(lst, phase, f):
        return statistics.median(p[phase][f] for p in lst)

    base = runs["nofgkaslr"]
    print("summary (medians; spread = min..max over FG seeds).  The guest's instruction")
    print("count varies from run to run (TCG's clock is the host's: timer interrupts, idle),")
    print("so cost = estimated cycles per kernel instruction (CPI) against nofgkaslr's,")
    print("i.e. FG's cycles for nofgkaslr's instruction count:")
    last = None
    for label in ("nofgkaslr", "fg", "no-FG build"):
        if runs[label]:
            pre = statistics.median(p["pre"]["all_insns"] for p in runs[label])
            print(f"  pre-kernel (firmware + decompressor) guest instructions, {label}: {pre:,.0f}")
    for phase in ("boot", "run"):
        def m(lst, f):
            return statistics.median(f(p[phase]) for p in lst)
        cpi = lambda p: p["cycles"] / p["insns"]  # noqa: E731
        bc = m(base, cpi)
        d = [100.0 * (cpi(p[phase]) - bc) / bc for p in runs["fg"]]
        l1 = lambda p: per_ki(p["l1i_miss"], p["insns"])  # noqa: E731
        l2 = lambda p: per_ki(p["l2_miss"] - p["l2_data_miss"], p["insns"])  # noqa: E731
        it = lambda p: per_ki(p["itlb_miss"], p["insns"])  # noqa: E731
        xp = lambda p: per_ki(p["tb_cross_page"], p["insns"])  # noqa: E731
        tbk = lambda p: p["insns"] / p["tb_exec"]  # noqa: E731
        print(f"  {phase:5} est. kernel cycles FG {statistics.median(d):+.2f}% "
              f"({min(d):+.2f}..{max(d):+.2f}) vs nofgkaslr; CPI {m(runs['fg'], cpi):.4f} vs {bc:.4f}")
        print(f"        L1i misses/ki {m(runs['fg'], l1):.2f} vs {m(base, l1):.2f}; L2 (i-side) "
              f"misses/ki {m(runs['fg'], l2):.3f} vs {m(base, l2):.3f}; iTLB misses/ki "
              f"{m(runs['fg'], it):.4f} vs {m(base, it):.4f}")
        print(f"        TCG: kernel TB entries from another guest page/ki {m(runs['fg'], xp):.1f} vs "
              f"{m(base, xp):.1f}; kernel insns per TB executed {m(runs['fg'], tbk):.2f} vs "
              f"{m(base, tbk):.2f}")
        if runs["no-FG build"]:
            nc = m(runs["no-FG build"], cpi)
            print(f"        the no-FG build's CPI {nc:.4f}: FG {100.0 * (m(runs['fg'], cpi) - nc) / nc:+.2f}%, "
                  f"nofgkaslr {100.0 * (bc - nc) / nc:+.2f}%")
        last = d
    work_table(runs)
    for w in ("init", "total"):
        wb = statistics.median(p["wall"][w] for p in base)
        wf = statistics.median(p["wall"][w] for p in runs["fg"])
        print(f"  wall to {w} (with the plugin, TCG): FG {wf:.1f} s vs nofgkaslr {wb:.1f} s "
              f"({100 * (wf - wb) / wb:+.1f}%)")
    print(f"run-time cost: FG {statistics.median(last):+.2f}% estimated kernel cycles vs nofgkaslr "
          f"({len(last)} seeds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
