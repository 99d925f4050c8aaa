"""bench/boot-time.py --icount: the boot-to-init count in guest instructions.

The fgk-icount plugin (perf-model/fgk-icount.c) counts a known real-mode
loop exactly, and the report's parsing and arithmetic (parse_icount,
icount_summary) on made-up counts.  The plugin test needs QEMU with plugin
support, a C compiler and QEMU 7.2's qemu-plugin.h (make -C perf-model
fetches it)."""

import shutil
import struct
import subprocess

import pytest

from conftest import REPO, load_script

QEMU = "qemu-system-x86_64"


@pytest.fixture(scope="module")
def bt():
    return load_script("boot_time", REPO / "bench" / "boot-time.py")


def test_parse_icount(bt):
    got = bt.parse_icount("pre=752725009 boot=1299313171 total=2052038180 "
                          "first_kernel=0xffffffffb4603cef first_user=0x40ebf0 reached=1\n")
    assert got == {"pre": 752725009, "boot": 1299313171, "total": 2052038180,
                   "first_kernel": 0xffffffffb4603cef, "first_user": 0x40ebf0, "reached": 1}
    assert bt.parse_icount("pre=5 total=5 first_kernel=0x0 reached=0")["reached"] == 0
    assert bt.parse_icount("") is None


def test_icount_summary(bt):
    def ic(pre, boot):
        return {"pre": pre, "boot": boot, "total": pre + boot, "reached": 1}

    fg = [ic(850e6, 1290e6), ic(852e6, 1280e6), ic(851e6, 1300e6)]
    nofg = [ic(750e6, 1300e6), ic(752e6, 1290e6), ic(751e6, 1310e6)]
    out = "\n".join(bt.icount_summary([100e6, 101e6, 102e6], fg, nofg))
    # median FG work 101 M over the median nofgkaslr total 2,050 M
    assert "FG work share of boot-to-init, guest instructions: 101.0 M / 2,050.0 M = 4.93%" in out
    assert "not of wall time" in out
    # FG - nofgkaslr per round: 90, 90, 90 M; before the kernel 100 M each
    assert ("FG - nofgkaslr to init: 90.0 M (90.0 M-90.0 M); before the kernel 100.0 M "
            "(100.0 M-100.0 M), in the kernel -10.0 M") in out
    assert "FG-KASLR   2,140.0 M (2,132.0 M-2,151.0 M): pre-kernel 851.0 M, kernel 1,290.0 M" in out


def rom(nops, passes):
    """A 64 KiB real-mode BIOS: `mov cx, passes`, `passes` times `nops`
    nops and `dec cx; jnz`, then `mov al, 0; out 0xf4, al` (isa-debug-exit).
    Returns the image and the instructions run up to and with the `out`."""
    img = bytearray(b"\xf4" * 65536)
    code = bytearray(struct.pack("<BH", 0xB9, passes))     # mov cx, passes
    body = len(code)
    code += b"\x90" * nops + b"\x49"                       # nops; dec cx
    code += b"\x0f\x85" + struct.pack("<h", body - (len(code) + 4))   # jnz body
    code += b"\xb0\x00\xe6\xf4"                            # mov al, 0; out 0xf4, al
    img[:len(code)] = code
    img[0xfff0:0xfff5] = struct.pack("<BHH", 0xEA, 0, 0xF000)   # reset: jmp far f000:0
    return bytes(img), 1 + 1 + passes * (nops + 2) + 2


@pytest.mark.parametrize("nops,passes", [(100, 1000), (3000, 37)])
def test_plugin_counts_known_loop(tmp_path, nops, passes):
    """No kernel-half address runs, so the plugin reports at QEMU's exit
    (reached=0) every instruction run, exactly."""
    if shutil.which(QEMU) is None:
        pytest.skip(f"{QEMU} not installed (make deps)")
    plugin = REPO / "build" / "perf-model" / "fgk-icount.so"
    r = subprocess.run(["make", "-s", "-C", str(REPO / "perf-model"), str(plugin)],
                       capture_output=True, text=True)
    if r.returncode:
        if not (REPO / "build" / "qemu-plugin" / "include" / "qemu-plugin.h").is_file():
            pytest.skip("QEMU 7.2's qemu-plugin.h could not be fetched "
                        "(scripts/qemu-plugin-header)")
        pytest.fail(f"make -C perf-model fgk-icount.so failed:\n{r.stdout}{r.stderr}")
    img, insns = rom(nops, passes)
    bios = tmp_path / "loop.rom"
    bios.write_bytes(img)
    out = tmp_path / "icount.txt"
    r = subprocess.run([QEMU, "-accel", "tcg,thread=single", "-M", "pc", "-m", "16M",
                        "-display", "none", "-nodefaults", "-bios", str(bios),
                        "-icount", "shift=0",
                        "-device", "isa-debug-exit,iobase=0xf4,iosize=4",
                        "-plugin", f"{plugin},out={out}"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, f"QEMU exit {r.returncode} (isa-debug-exit gives 1): {r.stderr}"
    text = out.read_text()
    assert f"pre={insns} total={insns} " in text and text.rstrip().endswith("reached=0"), \
        (text, insns)
