"""perf-model (docs/runtime-cost.md): the fgk-perf QEMU plugin's cache model
against hand-computed cases (perf-model/test_model.c), and the plugin itself
in a real QEMU on tiny known guests: a 64 KiB ROM of straight-line `nop`
loops as the machine's BIOS, so every instruction is known in advance.

Needs QEMU with plugin support, a C compiler and QEMU 7.2's qemu-plugin.h
(scripts/qemu-plugin-header, run by make -C perf-model)."""

import shutil
import struct
import subprocess

import pytest

from conftest import REPO, load_script

PLUGIN = REPO / "build" / "perf-model" / "fgk-perf.so"
QEMU = "qemu-system-x86_64"


@pytest.fixture(scope="module")
def plugin():
    if shutil.which(QEMU) is None:
        pytest.skip(f"{QEMU} not installed (make deps)")
    r = subprocess.run(["make", "-s", "-C", str(REPO / "perf-model")], capture_output=True, text=True)
    if r.returncode:
        if not (REPO / "build" / "qemu-plugin" / "include" / "qemu-plugin.h").is_file():
            pytest.skip("QEMU 7.2's qemu-plugin.h could not be fetched (scripts/qemu-plugin-header): "
                        + r.stderr.strip().splitlines()[-1])
        pytest.fail(f"make -C perf-model failed:\n{r.stdout}{r.stderr}")
    return PLUGIN


def test_model_unit():
    """The C model's LRU caches and TLBs against counts worked out by hand."""
    r = subprocess.run(["make", "-s", "-C", str(REPO / "perf-model"), "check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FAIL" not in r.stdout
    assert r.stdout.count("\nok ") + r.stdout.startswith("ok ") >= 15, r.stdout


def rom(nops, passes):
    """A 64 KiB real-mode BIOS at 0xf0000: `mov cx, passes`, then `passes`
    times a body of `nops` one-byte nops, `dec cx; jz out; jmp far` back;
    out: `mov al, 0; out 0xf4, al` (isa-debug-exit).  Returns the image and
    the number of instructions it executes."""
    img = bytearray(b"\xf4" * 65536)                       # hlt elsewhere
    code = bytearray(struct.pack("<BH", 0xB9, passes))     # mov cx, passes
    body = len(code)
    code += b"\x90" * nops                                 # nop x nops
    code += b"\x49"                                        # dec cx
    code += b"\x74\x05"                                    # jz +5 (over the jmp)
    code += struct.pack("<BHH", 0xEA, body, 0xF000)        # jmp far f000:body
    code += b"\xb0\x00\xe6\xf4"                            # mov al, 0; out 0xf4, al
    assert len(code) < 0xfff0
    img[:len(code)] = code
    img[0xfff0:0xfff5] = struct.pack("<BHH", 0xEA, 0, 0xF000)   # reset: jmp far f000:0
    # reset jmp, mov cx; per pass nops + dec + jz + jmp, but the last pass
    # takes the jz and skips the jmp; mov al + out, and the hlt after it:
    # the plugin counts a translated block's instructions when it is entered,
    # and nothing ends the block at `out` (QEMU exits inside it)
    insns = 1 + 1 + passes * (nops + 3) - 1 + 2 + 1
    return bytes(img), insns, (body, len(code) - 4)


def run_bios(plugin, tmp_path, img, args=""):
    """QEMU with img as its 64 KiB BIOS and the plugin (kernel_base=0: every
    instruction counted, plus args); the plugin's report, as text."""
    bios = tmp_path / "loop.rom"
    bios.write_bytes(img)
    out = tmp_path / "perf.txt"
    r = subprocess.run([QEMU, "-accel", "tcg,thread=single", "-M", "pc", "-m", "16M",
                        "-display", "none", "-nodefaults", "-bios", str(bios),
                        "-device", "isa-debug-exit,iobase=0xf4,iosize=4",
                        "-plugin", f"{plugin},out={out},kernel_base=0{args}"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, f"QEMU exit {r.returncode} (isa-debug-exit gives 1): {r.stderr}"
    return out.read_text()


def report_lines(text, key):
    """{NAME: {counter: value}} of the report's `key=NAME counter=value ...` lines."""
    got = {}
    for line in text.splitlines():
        if line.startswith(key + "="):
            kv = dict(x.split("=", 1) for x in line.split())
            name = kv.pop(key)
            got[name] = {k: int(v) for k, v in kv.items()}
    return got


def run_rom(plugin, tmp_path, nops, passes, extra=""):
    img, insns, (lo, hi) = rom(nops, passes)
    phases = report_lines(run_bios(plugin, tmp_path, img, extra), "phase")
    # every instruction is >= kernel_base=0: all of it is the "boot" phase
    assert phases["pre"]["insns"] == 0 and phases["run"]["insns"] == 0, phases
    lines = (0xF0000 + hi) // 64 - (0xF0000 + lo) // 64 + 1   # lines the loop body spans
    return phases["boot"], insns, lines


def test_plugin_counts_known_loop(plugin, tmp_path):
    """The instruction count equals the loop's; a 40 KiB body (more than the
    32 KiB L1i) misses in L1i on every line of every pass while L2 keeps it;
    an 8 KiB body misses only the first time."""
    big, big_insns, big_lines = run_rom(plugin, tmp_path, 40960, 12)
    assert big["insns"] == big_insns
    assert big["all_insns"] == big_insns
    assert big["l1i_miss"] >= 12 * big_lines, (big, big_lines)
    assert big["l1i_miss"] <= 12 * (big_lines + 2) + 2, (big, big_lines)
    assert big["l2_miss"] <= big_lines + 4, big           # cold misses only

    small, small_insns, small_lines = run_rom(plugin, tmp_path, 8192, 12)
    assert small["insns"] == small_insns
    assert small["l1i_miss"] <= small_lines + 4, (small, small_lines)
    assert small["l1i_miss"] >= small_lines

    # more passes over the small body: no more misses; over the big one: more
    small2, _, _ = run_rom(plugin, tmp_path, 8192, 24)
    assert small2["l1i_miss"] == small["l1i_miss"]
    big2, _, _ = run_rom(plugin, tmp_path, 40960, 24)
    assert big2["l1i_miss"] - big["l1i_miss"] >= 12 * big_lines

    # cycles follow the stated penalties (defaults base=1 l2_hit=12 l2_miss=40
    # stlb_hit=9 walk=30): doubling l2_hit adds 12 cycles per L1i miss
    big3, _, _ = run_rom(plugin, tmp_path, 40960, 12, ",l2_hit=24")
    assert big3["l1i_miss"] == big["l1i_miss"]
    assert big3["cycles"] - big["cycles"] == 12 * big["l1i_miss"]


def marked_rom(loops):
    """Like rom(), but a sequence of loops, each (K, nops, passes) opened by the
    workload marker K (perf-model/fgk-work.c's `nopl 0x464b47KK`, with an
    address-size prefix in 16-bit code) at the start of a block: each loop
    is a jump target.  Returns the image and the instructions each marker's
    segment executes (K 0: the reset jump before the first marker)."""
    img = bytearray(b"\xf4" * 65536)
    code = bytearray()
    expect = {0: 1}                                        # the reset jmp far
    for k, nops, passes in loops:
        code += bytes([0x67, 0x0F, 0x1F, 0x80, k, 0x47, 0x4B, 0x46])
        code += struct.pack("<BH", 0xB9, passes)           # mov cx, passes
        body = len(code)
        code += b"\x90" * nops
        code += b"\x49\x74\x05"                           # dec cx; jz +5
        code += struct.pack("<BHH", 0xEA, body, 0xF000)    # jmp far f000:body
        expect[k] = expect.get(k, 0) + 2 + passes * (nops + 3) - 1
    code += b"\xb0\x00\xe6\xf4"                            # mov al, 0; out 0xf4, al
    expect[loops[-1][0]] += 3                              # + the hlt after it
    img[:len(code)] = code
    img[0xfff0:0xfff5] = struct.pack("<BHH", 0xEA, 0, 0xF000)
    return bytes(img), expect


def test_plugin_workload_markers(plugin, tmp_path):
    """Each marker's segment gets exactly its loop's instructions, and a loop
    over more than L1i misses in its own segment only (bench/run-time-cost.py's
    per-workload rows rest on this)."""
    img, expect = marked_rom([(3, 4000, 50), (7, 40960, 6), (3, 100, 7)])
    work = {int(k): v for k, v in
            report_lines(run_bios(plugin, tmp_path, img), "work").items()}
    assert sorted(work) == [0, 3, 7], work
    for k, n in expect.items():
        assert work[k]["insns"] == n, (k, work[k]["insns"], n)
    assert sum(w["insns"] for w in work.values()) == sum(expect.values())
    lines_big = 40960 // 64
    assert work[7]["l1i_miss"] >= 6 * lines_big, work[7]          # 40 KiB > L1i: every pass
    assert work[3]["l1i_miss"] <= 4000 // 64 + 100 // 64 + 8, work[3]   # 4 KiB: cold only


def test_plugin_bad_argument(plugin, tmp_path):
    """A bad plugin argument is refused with a one-line reason; QEMU stops."""
    r = subprocess.run([QEMU, "-accel", "tcg,thread=single", "-display", "none", "-nodefaults",
                        "-plugin", f"{plugin},text_page=3M"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "text_page=3M: 2M or 4K" in r.stderr


REPLAY = REPO / "build" / "perf-model" / "fgk-replay"


def test_trace_replay_reproduces_plugin(plugin, tmp_path):
    """fgk-perf trace= records marked segment 5's blocks; fgk-replay runs them
    through the same model: without a map it reproduces the plugin's counts
    exactly (nothing ran before the segment but the reset jump, on another
    line), --lines charges every miss to a line; with a map that moves nine
    of the 8 KiB body's lines into L1i set 0 (4 KiB apart), set 0 holds 12
    of the loop's lines (3 of its own, 0xf0000, 0xf1000, 0xf2000), more than
    its 8 ways: all 12 miss on each of the 11 later passes, exactly 132 more
    misses (and 9 more 4 KiB iTLB misses, one per new page); --sets shows
    set 0 with its 12 lines and 144 misses, every other set its lines once."""
    img, expect = marked_rom([(5, 8192, 12)])
    trc = tmp_path / "t.trc"
    rep = {}
    for line in run_bios(plugin, tmp_path, img, f",trace={trc},trace_mark=5").splitlines():
        if line.startswith(("work=5 ", "trace_mark=")):
            rep.update({k: int(v) for k, v in (x.split("=", 1) for x in line.split())})
    assert rep["insns"] == expect[5]
    assert rep["trace_truncated"] == 0 and rep["trace_execs"] == rep["tb_exec"]

    def replay(*args):
        r = subprocess.run([str(REPLAY), *map(str, args), str(trc)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return {k: int(v) for k, v in (x.split("=", 1) for x in r.stdout.split())}

    lines = tmp_path / "lines.txt"
    same = replay("--lines", lines)
    for f in ("insns", "l1i_miss", "l2_miss", "itlb_miss", "stlb_miss", "cycles"):
        assert same[f] == rep[f], (f, same, rep)
    assert same["execs"] == rep["trace_execs"]
    per_line = [l.split() for l in lines.read_text().splitlines()]
    assert sum(int(n) for _, n, _ in per_line) == same["l1i_miss"]
    assert all(int(a, 16) % 64 == 0 and 0xF0000 <= int(a, 16) < 0x100000 for a, _, _ in per_line)
    # the body's second line: one miss (cold), fetched on each of the 12 passes
    assert ["00000000000f0040", "1", "12"] in per_line, per_line[:3]

    fold = tmp_path / "fold.map"
    fold.write_text("# nine body lines into set 0\n" + "".join(
        f"{0xf0000 + 64 * j:x} {0xf0000 + 64 * j + 64:x} {0x400000 + 4096 * j:x}\n"
        for j in range(1, 10)))
    sets = tmp_path / "sets.txt"
    moved = replay("--map", fold, "--sets", sets)
    per_set = {int(k): (int(n), int(m)) for k, n, m in (l.split() for l in sets.read_text().splitlines())}
    assert sorted(per_set) == list(range(64))
    # set 0: its 12 lines each missed on all 12 passes; the others only cold
    assert per_set[0] == (12, 12 * 12), per_set[0]
    assert all(m == n for k, (n, m) in per_set.items() if k), per_set
    assert sum(m for _, m in per_set.values()) == moved["l1i_miss"]
    # --hot N: only lines fetched in N block executions or more; each of the
    # 12 is fetched on all 12 passes (a line split between two blocks: twice
    # a pass), none in 100
    for hot, want in ((12, 12), (100, 0)):
        replay("--map", fold, "--sets", sets, "--hot", hot)
        got = {int(k): int(n) for k, n, _ in (l.split() for l in sets.read_text().splitlines())}
        assert got[0] == want, (hot, got[0])
    assert moved["insns"] == same["insns"]
    assert moved["l1i_miss"] == same["l1i_miss"] + 12 * 11, (moved, same)
    assert moved["itlb_miss"] == same["itlb_miss"] + 9, (moved, same)

    # --warm: the trace twice, the second counted: the 8 KiB loop then never
    # misses; folded, set 0's 12 lines miss on every one of the 12 passes
    assert replay("--warm")["l1i_miss"] == 0
    pairs = tmp_path / "pairs.txt"
    warm = replay("--warm", "--map", fold, "--pairs", pairs)
    assert warm["l1i_miss"] == 12 * 12 and warm["insns"] == same["insns"], warm
    # --pairs: every miss charged to a (previous block's last instruction,
    # block's first instruction) pair of the traced addresses
    pl = [l.split() for l in pairs.read_text().splitlines()]
    assert sum(int(n) for _, _, n in pl) == warm["l1i_miss"]
    assert all(0xF0000 <= int(t, 16) < 0x100000 for _, t, _ in pl), pl
    # the loop's back jump (jmp far at the body's end -> the body's start)
    # leads into missing code on every pass: its pair is there
    assert any(int(t, 16) == 0xF0000 + 11 for _, t, _ in pl), pl

    bad = tmp_path / "bad.map"
    bad.write_text("f0000 f0040 400000\nf0020 f0060 500000\n")
    r = subprocess.run([str(REPLAY), "--map", str(bad), str(trc)], capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr == f"fgk-replay: {bad}: overlapping ranges\n"
    rom_file = tmp_path / "m5.rom"          # any file that is not a trace
    rom_file.write_bytes(img)
    r = subprocess.run([str(REPLAY), str(rom_file)], capture_output=True, text=True)
    assert r.returncode == 1 and "not an fgk-perf trace" in r.stderr and str(rom_file) in r.stderr


def test_plugin_trace_arguments(plugin, tmp_path):
    """trace= needs trace_mark= (a marker 1..15), and the reverse."""
    for arg, msg in ((f"trace={tmp_path / 't'}", "trace= and trace_mark= go together"),
                     ("trace_mark=2", "trace= and trace_mark= go together"),
                     (f"trace={tmp_path / 't'},trace_mark=16", "trace_mark=16: a workload marker, 1..15")):
        r = subprocess.run([QEMU, "-accel", "tcg,thread=single", "-display", "none", "-nodefaults",
                            "-plugin", f"{plugin},{arg}"], capture_output=True, text=True, timeout=60)
        assert r.returncode != 0
        assert msg in r.stderr, r.stderr


def test_remedy_layouts(kernel):
    """bench/run-time-cost.py --remedies' layouts of the test kernel: its
    placement of the seed's order is libfgk's layout and of link order the
    link addresses; each remedy draw is an order of every section; by object
    file keeps each object's sections together in link order; X.cold puts
    each .cold part right after its function; entropies are log2(units!)."""
    import math
    import random
    rc = load_script("runtime_cost", REPO / "bench" / "run-time-cost.py")
    text = rc.Text(kernel)
    n = len(text.secs)
    assert n > 1000 and [s.addr for s in text.secs] == sorted(s.addr for s in text.secs)
    seed = "00" * 31 + "2a"
    real = text.real(seed)
    assert sorted(real) == list(range(n))
    assert text.pack(sorted(real, key=real.get))[0] == real
    assert text.pack(range(n))[0] == {i: s.addr for i, s in enumerate(text.secs)}
    hot = {0: 1, 5: 1, n - 1: 1}
    orders = rc.remedy_orders(text, hot, random.Random(3), 16)
    for name, (order, _) in orders.items():
        assert sorted(order) == list(range(n)), name
    assert orders["hot set packed"][0][:3] and set(orders["hot set packed"][0][:3]) == set(hot)
    runs = orders["runs of 16 (link order inside)"][0]
    assert all(runs[k + 1] == runs[k] + 1 for k in range(0, n - 1) if runs[k] % 16 != 15
               and runs[k] != n - 1)
    ent = rc.entropies(text, hot, 16)
    assert ent["runs of 16 (link order inside)"] == pytest.approx(math.lgamma(-(-n // 16) + 1) / math.log(2))
    assert ent["hot set packed"] == pytest.approx(rc.log2_fact(3) + rc.log2_fact(n - 3))
    assert rc.log2_fact(4) == pytest.approx(math.log2(24))
    if text.objs is None:
        return          # no build tree: by object file is left out, and said so by its absence
    obj = orders["by object file"][0]
    seen, prev = set(), None
    for i in obj:       # each object's positions in one run, ascending
        o = text.objs[i]
        if o != prev:
            assert o not in seen, o
            seen.add(o)
        else:
            assert i > last
        prev, last = o, i
    assert ent["by object file"] == pytest.approx(rc.log2_fact(len(set(text.objs))))
    new, newcold = text.pack(orders["X.cold next to X"][0], True)
    assert len(newcold) == len(text.cold) > 0
    for i, a in newcold.items():
        assert a == new[i] + text.secs[i].size
