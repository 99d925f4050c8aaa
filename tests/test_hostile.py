"""Hostile input (issue 13): every defect found by crafting inputs and by
fuzzing has a regression test here, and a crafted-input matrix runs every
fgk subcommand on truncated, corrupt and hostile files.

Inputs are generated at test time: ELF fixtures from C source
(layout-tools/tests/fixtures/build.sh), then edited here with
layout-tools/fuzz/inputs.py (ELF cores, kdump files, flattened streams,
VMCOREINFO, records, oopses).  No kernel is needed.

Every failure must look the same: exactly one line on stderr that starts
with "fgk" and names the file, a non-zero exit (never a signal), nothing on
stdout, and no output or temp file left behind.  FGK_BIN runs the tests on
another build of fgk (the sanitizer build: build/sanitize/bin/fgk).
"""
import functools
import hashlib
import os
import signal
import stat
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

import oracle

REPO = Path(__file__).resolve().parent.parent
TOOLS = REPO / "layout-tools"
FGK = Path(os.environ.get("FGK_BIN", REPO / "build" / "bin" / "fgk"))
sys.path.insert(0, str(TOOLS / "fuzz"))
import inputs as I  # noqa: E402

SEED = bytes(range(32)).hex()
SEED2 = "5a" * 32
SHT_NULL, SHT_RELA, SHT_NOBITS = 0, 4, 8
R_X86_64_64 = 1


fgk = functools.partial(oracle.fgk, text=False, timeout=60)   # bytes in and out


def one_line_error(r, path, *needles):
    """The four things every failure must be (output files: see no_output)."""
    assert r.returncode in (1, 2), (r.returncode, r.err)
    lines = r.err.splitlines()
    assert len(lines) == 1, f"want one error line, got {r.err!r}"
    assert lines[0].startswith("fgk"), lines[0]
    if path is not None:
        assert str(path) in lines[0], f"{path} not named in {lines[0]!r}"
    for n in needles:
        assert n in lines[0], f"{n!r} not in {lines[0]!r}"
    assert not any(c in r.stderr for c in b"\x1b\x07"), "raw control bytes on stderr"
    assert r.stdout == b"", f"output on error: {r.out[:200]!r}"


def no_output(d, *names):
    """Nothing written: the named outputs absent, no temp files in d."""
    for n in names:
        assert not (d / n).exists(), f"{n} left behind"
    left = [p.name for p in d.iterdir() if ".tmp." in p.name]
    assert not left, f"temp files left: {left}"


@pytest.fixture(scope="session")
def fix(elf_fixtures):
    """Tools built, ELF fixtures generated from source (conftest.py)."""
    return elf_fixtures


@pytest.fixture
def env(tmp_path):
    """A private relink cache."""
    return dict(os.environ, FGK_CACHE_DIR=str(tmp_path / "cache"), TMPDIR=str(tmp_path))


def write(path, data):
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def sha(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# ---------------------------------------------------------------- crafting

def section_null_wild(fix):
    """Defect 1: the section holding linux_banner becomes SHT_NULL with an
    offset far beyond the end of the file."""
    e = I.Elf64((fix / "fixture.elf").read_bytes())
    e.set_shdr(e.find(".rodata"), type=SHT_NULL, offset=0x7fffffff0000)
    return e.bytes()


def rela_of(e, target):
    for i in e.sections(SHT_RELA):
        if e.shdr(i)["info"] == e.find(target):
            return i
    raise KeyError(target)


def rela_entry(e, i, k):
    h = e.shdr(i)
    return struct.unpack_from("<QQq", e.data, h["offset"] + 24 * k)


def set_rela(e, i, k, offset, info, addend=0):
    h = e.shdr(i)
    struct.pack_into("<QQq", e.data, h["offset"] + 24 * k, offset, info, addend)


def moved_text_rela(fix):
    """A relocation in .rela.debug_info against a symbol in a .text.*
    section (so relinking changes the field), as (Elf64, rela index, k)."""
    e = I.Elf64((fix / "relocs.elf").read_bytes())
    i = rela_of(e, ".debug_info")
    symtab = e.sections(2)[0]
    sh = e.shdr(symtab)
    for k in range(e.shdr(i)["size"] // 24):
        _, info, _ = rela_entry(e, i, k)
        sym = info >> 32
        st_shndx = struct.unpack_from("<H", e.data, sh["offset"] + 24 * sym + 6)[0]
        if 0 < st_shndx < e.shnum and e.name(st_shndx).startswith(".text."):
            return e, i, k
    raise AssertionError("no relocation against .text.* in .rela.debug_info")


# ---------------------------------------------------------------- defect 1

ALL_VMLINUX_COMMANDS = [
    ["layout", "{v}", "--seed", SEED],
    ["map", "{v}", "--seed", SEED],
    ["map", "{v}", "--seed", SEED, "--format", "system-map"],
    ["addr", "{v}", "--seed", SEED, "fn_tiny"],
    ["relink", "{v}", "--seed", SEED, "--no-cache", "-o", "{o}"],
    ["relink", "{v}", "--seed", SEED],
    ["symbolize", "{v}", "--seed", SEED, "{t}"],
    ["symbolize", "{v}", "{t}"],
    ["seed", "record", "--seed", SEED, "--vmlinux", "{v}", "-o", "{o}"],
    ["seed", "show", "{r}", "--vmlinux", "{v}"],
    ["seed", "capture", "--text", "{t}", "--vmlinux", "{v}", "-o", "{o}"],
    ["seed", "capture", "--oops", "{t}", "--vmlinux", "{v}", "-o", "{o}"],
    ["crash", "{d}", "{v}", "-n"],
]


def run_all_commands(tmp_path, env, vmlinux):
    text = write(tmp_path / "oops.txt", I.oops([(0xffffffff9d000045, "fn_tiny+0x5/0x10")])
                 + f"fgkaslr_seed={SEED}\n".encode())
    rec = write(tmp_path / "rec", I.record(seed=SEED, build_id=None))
    dump = write(tmp_path / "vmcore", I.elf_core(I.vmcoreinfo(build_id=None, seed=SEED)))
    for cmd in ALL_VMLINUX_COMMANDS:
        args = [a.format(v=vmlinux, o=tmp_path / "out", t=text, r=rec, d=dump)
                for a in cmd]
        yield args, fgk(*args, env=env)


def test_sht_null_wild_offset_every_command(fix, tmp_path, env):
    bad = write(tmp_path / "vmlinux", section_null_wild(fix))
    for args, r in run_all_commands(tmp_path, env, bad):
        one_line_error(r, bad, "extends beyond the end of the file")
        no_output(tmp_path, "out")


# ---------------------------------------------------------------- defect 2

def relink_fails(fix, tmp_path, env, data, *needles, seed=SEED):
    bad = write(tmp_path / "vmlinux", data)
    r = fgk("relink", bad, "--seed", seed, "--no-cache", "-o", tmp_path / "out", env=env)
    one_line_error(r, bad, *needles)
    no_output(tmp_path, "out")
    # fgk crash relinks too: the same refusal, nothing cached
    dump = write(tmp_path / "vmcore", I.elf_core(I.vmcoreinfo(build_id=None, seed=seed)))
    r = fgk("crash", dump, bad, "--crash", "echo", "-q", env=env)  # -n writes nothing
    one_line_error(r, bad, *needles)
    cache = tmp_path / "cache"
    assert not cache.exists() or not any(cache.rglob("*")), list(cache.rglob("*"))


def test_relink_r_x86_64_64_at_the_end_of_a_section(fix, tmp_path, env):
    """An 8-byte field whose last 4 bytes are past the section (was checked
    for 4 bytes, written as 8)."""
    e, i, k = moved_text_rela(fix)
    _, info, add = rela_entry(e, i, k)
    size = e.shdr(e.find(".debug_info"))["size"]
    set_rela(e, i, k, size - 4, (info >> 32) << 32 | R_X86_64_64, add)
    relink_fails(fix, tmp_path, env, e.bytes(), "points outside .debug_info")


def test_relink_unsupported_type_far_outside(fix, tmp_path, env):
    """Found by fuzz_relink: an unsupported relocation type with an offset
    far outside its section formed a wild pointer (UBSan) before the type
    was refused."""
    e, i, k = moved_text_rela(fix)
    _, info, add = rela_entry(e, i, k)
    set_rela(e, i, k, 0x7000000000000000, (info >> 32) << 32 | 9, add)  # R_X86_64_GOTPCREL
    relink_fails(fix, tmp_path, env, e.bytes(), "points outside .debug_info")
    set_rela(e, i, k, 8, (info >> 32) << 32 | 9, add)
    relink_fails(fix, tmp_path, env, e.bytes(), "unsupported relocation type 9")


def test_relink_target_section_null(fix, tmp_path, env):
    """A relocation section applying to an SHT_NULL section (wrote where the
    attacker chose, exit 0)."""
    e = I.Elf64((fix / "relocs.elf").read_bytes())
    e.set_shdr(e.find(".debug_line"), type=SHT_NULL)
    relink_fails(fix, tmp_path, env, e.bytes(), ".rela.debug_line",
                 "has no file contents")


def test_relink_sh_info_out_of_range(fix, tmp_path, env):
    e = I.Elf64((fix / "relocs.elf").read_bytes())
    e.set_shdr(rela_of(e, ".text.fn_small"), info=0xfff0)
    relink_fails(fix, tmp_path, env, e.bytes(), "applies to section 65520 of")


def test_relink_misaligned_rela_same_result(fix, tmp_path, env):
    """Elf64_Rela records at an odd file offset (read misaligned before):
    the same relinked output as from the aligned file."""
    data = bytearray((fix / "relocs.elf").read_bytes())
    e = I.Elf64(bytes(data))
    i = rela_of(e, ".debug_info")
    h = e.shdr(i)
    blob = bytes(e.data[h["offset"]:h["offset"] + h["size"]])
    e.data += b"\0" * 3        # an odd offset at the end of the file
    new_off = len(e.data)
    e.data += blob
    e.set_shdr(i, offset=new_off)
    bad = write(tmp_path / "odd.elf", e.bytes())
    good = fgk("relink", fix / "relocs.elf", "--seed", SEED, "--no-cache", "-o", tmp_path / "a", env=env)
    odd = fgk("relink", bad, "--seed", SEED, "--no-cache", "-o", tmp_path / "b", env=env)
    assert good.returncode == 0 and odd.returncode == 0, (good.err, odd.err)
    a, b = (tmp_path / "a").read_bytes(), (tmp_path / "b").read_bytes()
    # relocation sections are not in vmlinux.fgk, so where they were does
    # not show: the records applied the same way give the same file
    assert a == b, "the misaligned relocations were applied differently"
    assert not I.Elf64(a).sections(4), "SHT_RELA sections in vmlinux.fgk"


# ---------------------------------------------------------------- defect 3

@pytest.mark.parametrize("how,needle", [
    ("link0", "links to section 0 of"),
    ("link-not-symtab", "not to the symbol table"),
    ("info0", "applies to section 0 of"),
    ("sym-past-symtab", "refers to symbol"),
])
def test_relink_refuses_malformed_relocation_sections(fix, tmp_path, env, how, needle):
    e = I.Elf64((fix / "relocs.elf").read_bytes())
    i = rela_of(e, ".text.fn_small")
    if how == "link0":
        e.set_shdr(i, link=0)
    elif how == "link-not-symtab":
        e.set_shdr(i, link=e.find(".debug_str"))
    elif how == "info0":
        e.set_shdr(i, info=0)
    else:
        off, info, add = rela_entry(e, i, 0)
        set_rela(e, i, 0, off, (0x7fffff << 32) | (info & 0xffffffff), add)
    relink_fails(fix, tmp_path, env, e.bytes(), e.name(i) if how != "sym-past-symtab"
                 else "relocation 0 of .rela.text.fn_small", needle)


# ---------------------------------------------------------------- defect 4

@pytest.mark.parametrize("kw,needle", [
    (dict(size_note=1 << 40), "notes at offset"),
    (dict(size_vmcoreinfo=1 << 33), "VMCOREINFO at offset"),
    (dict(offset_vmcoreinfo=1 << 50), "VMCOREINFO at offset"),
    (dict(max_mapnr=1 << 31), "page frames but bitmaps for"),
    (dict(version=99), "version 99"),
    (dict(block_size=12345), "block size 12345"),
])
def test_kdump_header_lies(fix, tmp_path, kw, needle):
    dump = write(tmp_path / "vmcore", I.kdump(I.vmcoreinfo(), **kw))
    for args in (["crash", "--info", dump], ["seed", "capture", "--vmcore", dump, "-o", tmp_path / "rec"]):
        one_line_error(fgk(*args), dump, "corrupt kdump header", needle)
    no_output(tmp_path, "rec")


def test_kdump_truncated(tmp_path):
    data = I.kdump(I.vmcoreinfo())
    for cut in (100, 5000, len(data) - 9000, len(data) - 24 * 8 - 8 * 4096 + 10):
        dump = write(tmp_path / "vmcore", data[:len(data) - cut] if cut < len(data) else data[:cut])
        one_line_error(fgk("crash", "--info", dump), dump, "truncated")


def test_kdump_good_and_flattened(tmp_path):
    """The generated kdump file is read (libkdumpfile agrees with fgk's own
    header checks), flattened or not."""
    data = I.kdump(I.vmcoreinfo(seed=SEED))
    for name, d in (("kdump", data), ("flat", I.flatten(data))):
        dump = write(tmp_path / name, d)
        r = fgk("crash", "--info", dump)
        assert r.returncode == 0, r.err
        assert f"fgkaslr-seed: {SEED}" in r.out


def test_libkdumpfile_kdump_free_crash(tmp_path):
    """A kdump file with 1 KiB blocks (x86_64 pages are 4 KiB) makes
    libkdumpfile 0.5.1 fail to open it and then SEGV in kdump_free() (found
    by fuzzing libkdumpfile directly; the fgk of before died of SIGSEGV)."""
    dump = write(tmp_path / "vmcore", I.kdump(I.vmcoreinfo(), pages=1, block_size=1024))
    for args in (["crash", "--info", dump], ["seed", "capture", "--vmcore", dump]):
        one_line_error(fgk(*args), dump, "libkdumpfile")
    flat = write(tmp_path / "vmcore.flat", I.flatten(dump.read_bytes()))
    one_line_error(fgk("crash", "--info", flat), flat, "libkdumpfile")


def test_libkdumpfile_crash_is_isolated(tmp_path):
    """libkdumpfile runs in a child process: when it dies (here: made to,
    by a preloaded library that crashes its kdump_open_fdset), fgk reports a
    corrupt dump."""
    so = tmp_path / "crashkd.so"
    src = write(tmp_path / "crashkd.c", "#include <signal.h>\n"
                "int kdump_open_fdset(void *c, unsigned n, const int *fd) { (void)c; (void)n; (void)fd;"
                " raise(SIGSEGV); return 0; }\n")
    r = subprocess.run(["gcc", "-shared", "-fPIC", "-o", so, src], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    dump = write(tmp_path / "vmcore", I.kdump(I.vmcoreinfo()))
    if "sanitize" in str(FGK):
        pytest.skip("LD_PRELOAD interposition is not reliable under ASan")
    r = fgk("crash", "--info", dump, env=dict(os.environ, LD_PRELOAD=str(so)))
    one_line_error(r, dump, "corrupt dump", "libkdumpfile", "signal 11")


# ---------------------------------------------------------------- defect 5

def test_fifo_never_hangs(fix, tmp_path, env):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    cases = [["layout", fifo, "--seed", SEED], ["relink", fifo, "--seed", SEED],
             ["symbolize", fifo, "/dev/null"], ["crash", "--info", fifo],
             ["crash", fifo, fix / "fixture.elf", "-n"],
             ["seed", "capture", "--vmcore", fifo]]
    for args in cases:
        t0 = time.time()
        r = fgk(*args, env=env, timeout=20)
        assert time.time() - t0 < 10, args
        one_line_error(r, fifo, "not a regular file")


# ---------------------------------------------------------------- defect 6

def test_unbounded_reads(fix, tmp_path):
    v = fix / "fixture.elf"
    for args in (["symbolize", v, "/dev/zero"], ["symbolize", v, "--seed", SEED, "/dev/zero"],
                 ["seed", "capture", "--text", "/dev/zero"]):
        one_line_error(fgk(*args, timeout=30), "/dev/zero", "binary data")
    big = tmp_path / "big.log"
    with open(big, "wb") as f:
        f.write(b"x" * (64 << 20) + b"\n")
    for args in (["symbolize", v, big], ["seed", "capture", "--text", big]):
        one_line_error(fgk(*args, timeout=60), big, "larger than")
    one_line_error(fgk("seed", "capture", "--text", "-", input=b"\0" * 100000), "stdin", "binary data")
    with open("/dev/zero", "rb") as z:     # addr streams stdin: bounded lines, NUL stops
        r = subprocess.run([str(FGK), "addr", v, "--seed", SEED], stdin=z,
                           capture_output=True, timeout=30)
    r.out, r.err = r.stdout.decode(), r.stderr.decode()
    one_line_error(r, "stdin", "binary data")
    r = fgk("addr", v, "--seed", SEED, input=b"x" * (10 << 20) + b"\nfn_tiny\n")
    assert r.returncode == 1 and "item too long" in r.err and "fn_tiny" in r.out, r.err


def test_seed_parse_reads_all_of_stdin(fix):
    ok = fgk("seed", "parse", input=(SEED + "\n" + " " * 5000 + "\n").encode())
    assert ok.returncode == 0 and ok.out.strip() == SEED, ok.err
    bad = fgk("seed", "parse", input=(SEED + "\n" + " " * 5000 + "garbage\n").encode())
    one_line_error(bad, "stdin", "non-hex character")
    one_line_error(fgk("seed", "parse", input=b"x" * (1 << 17)), "stdin", "larger than")


# ---------------------------------------------------------------- defect 7

def output_commands(fix, tmp_path, out):
    v = fix / "relocs.elf"
    text = write(tmp_path / "seed.txt", f"fgkaslr_seed={SEED}\n")
    return [
        ["relink", v, "--seed", SEED, "--no-cache", "-o", out],
        ["relink", v, "--seed", SEED, "-o", out],
        ["map", v, "--seed", SEED, "--format", "system-map", "-o", out],
        ["seed", "record", "--seed", SEED, "--vmlinux", v, "-o", out],
        ["seed", "capture", "--text", text, "-o", out],
    ]


def test_output_symlink_refused(fix, tmp_path, env):
    target = write(tmp_path / "precious", "keep me\n")
    link = tmp_path / "link"
    link.symlink_to(target)
    for args in output_commands(fix, tmp_path, link):
        one_line_error(fgk(*args, env=env), link, "symbolic link")
        assert link.is_symlink() and target.read_text() == "keep me\n"


def test_output_device_refused(fix, tmp_path, env):
    for args in output_commands(fix, tmp_path, "/dev/null"):
        one_line_error(fgk(*args, env=env), "/dev/null", "not a regular file")
        assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_output_directory_refused(fix, tmp_path, env):
    d = tmp_path / "adir"
    d.mkdir()
    for args in output_commands(fix, tmp_path, d):
        one_line_error(fgk(*args, env=env), d, "not a regular file")
        assert d.is_dir()


def test_output_never_overwrites_the_input(fix, tmp_path, env):
    v = write(tmp_path / "vmlinux", (fix / "relocs.elf").read_bytes())
    hard = tmp_path / "hardlink"
    os.link(v, hard)
    before = sha(v)
    for out in (v, hard):
        for args in (["relink", v, "--seed", SEED, "--no-cache", "-o", out],
                     ["relink", v, "--seed", SEED, "-o", out],
                     ["map", v, "--seed", SEED, "--format", "system-map", "-o", out],
                     ["seed", "record", "--seed", SEED, "--vmlinux", v, "-o", out]):
            one_line_error(fgk(*args, env=env), out, "is the input", "refusing to overwrite")
            assert sha(v) == before
    rec = write(tmp_path / "rec", I.record(seed=SEED, build_id=None))
    one_line_error(fgk("seed", "record", "--seed-file", rec, "--vmlinux", v, "-o", rec, env=env),
                   rec, "is the input")
    flat = write(tmp_path / "dump.flat", I.flatten(I.kdump(I.vmcoreinfo())))
    one_line_error(fgk("seed", "capture", "--vmcore", flat, "-o", flat), flat, "is the input")


# ---------------------------------------------------------------- defect 8

def cache_entry(tmp_path, fix, seed=SEED):
    bid = subprocess.run(["readelf", "-n", fix / "relocs.elf"], capture_output=True,
                         text=True).stdout.split("Build ID: ")[1].split()[0]
    return tmp_path / "cache" / bid / f"{seed}.vmlinux.fgk"


def relink_ok(fix, env, *extra):
    r = fgk("relink", fix / "relocs.elf", "--seed", SEED, *extra, env=env)
    assert r.returncode == 0, r.err
    return Path(r.out.strip())


def has_debug_info(path):
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
    return ".debug_info" in out


@pytest.mark.parametrize("poison", ["directory", "empty", "stripped", "garbage", "symlink", "other-build"])
def test_cache_entries_verified(fix, tmp_path, env, poison):
    entry = cache_entry(tmp_path, fix)
    entry.parent.mkdir(parents=True)
    if poison == "directory":
        entry.mkdir()
    elif poison == "empty":
        entry.write_bytes(b"")
    elif poison == "stripped":
        good = tmp_path / "good"
        assert fgk("relink", fix / "relocs.elf", "--seed", SEED, "--no-cache", "-o", good).returncode == 0
        subprocess.run(["objcopy", "--strip-debug", good, entry], check=True)
        assert not has_debug_info(entry)
    elif poison == "garbage":
        entry.write_bytes(os.urandom(5000))
    elif poison == "symlink":
        entry.symlink_to(fix / "relocs.elf")
    else:
        entry.write_bytes((fix / "fixture.elf").read_bytes())
    path = relink_ok(fix, env, "--stats")
    assert path == entry
    assert entry.is_file() and not entry.is_symlink()
    assert has_debug_info(entry)
    assert entry.read_bytes() == (relink_ok(fix, env, "--no-cache", "-o", tmp_path / "ref") and
                                  (tmp_path / "ref").read_bytes())
    # and a good entry is used as it is
    r = fgk("relink", fix / "relocs.elf", "--seed", SEED, "--stats", env=env)
    assert "cached" in r.err, r.err


def test_cache_nonempty_directory_is_an_error(fix, tmp_path, env):
    entry = cache_entry(tmp_path, fix)
    (entry / "x").mkdir(parents=True)
    r = fgk("relink", fix / "relocs.elf", "--seed", SEED, env=env)
    one_line_error(r, entry, "cannot be removed")


def test_failed_relink_leaves_no_directory(fix, tmp_path, env):
    e = I.Elf64((fix / "relocs.elf").read_bytes())
    e.set_shdr(rela_of(e, ".text.fn_small"), info=0)
    bad = write(tmp_path / "vmlinux", e.bytes())
    one_line_error(fgk("relink", bad, "--seed", SEED, env=env), bad)
    cache = tmp_path / "cache"
    assert not cache.exists() or not any(p.is_dir() and not any(p.iterdir())
                                         for p in cache.rglob("*")), list(cache.rglob("*"))


STOPPER = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>
/* stop the process in fsync() of the temp file: the test then signals it */
int fsync(int fd)
{
	static int (*real)(int);
	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	kill(getpid(), SIGSTOP);
	return real(fd);
}
"""


@pytest.fixture(scope="module")
def stopper(tmp_path_factory):
    d = tmp_path_factory.mktemp("stopper")
    write(d / "stop.c", STOPPER)
    r = subprocess.run(["gcc", "-shared", "-fPIC", "-o", d / "stop.so", d / "stop.c", "-ldl"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return d / "stop.so"


def default_signals():
    """fgk keeps a SIG_IGN it inherits (nohup, background jobs: a shell
    without job control starts those with SIGINT and SIGQUIT ignored); the
    tests signal it as a terminal would, so they start it with none."""
    for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)


def stopped_relink(fix, env, stopper, *extra):
    """Start a relink, wait until it stops inside fsync() of its temp file."""
    if "sanitize" in str(FGK):
        pytest.skip("LD_PRELOAD interposition is not reliable under ASan")
    p = subprocess.Popen([str(FGK), "relink", str(fix / "relocs.elf"), "--seed", SEED, *extra],
                         env=dict(env, LD_PRELOAD=str(stopper)), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=default_signals)
    for _ in range(500):
        with open(f"/proc/{p.pid}/stat") as f:
            if f.read().split(") ")[1].startswith("T"):
                return p
        time.sleep(0.01)
    p.kill()
    raise AssertionError("relink never reached fsync")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("where", ["cache", "output"])
def test_temp_files_removed_on_signals(fix, tmp_path, env, stopper, sig, where):
    extra = ("--no-cache", "-o", str(tmp_path / "out")) if where == "output" else ()
    d = tmp_path if where == "output" else cache_entry(tmp_path, fix).parent
    p = stopped_relink(fix, env, stopper, *extra)
    assert [x for x in d.iterdir() if ".tmp." in x.name], "no temp file while writing"
    p.send_signal(sig)
    p.send_signal(signal.SIGCONT)
    p.wait(timeout=20)
    assert p.returncode == -sig
    no_output(d, "out", cache_entry(tmp_path, fix).name)


@pytest.mark.parametrize("where", ["cache", "output"])
def test_stale_temp_files_cleaned_next_run(fix, tmp_path, env, stopper, where):
    extra = ("--no-cache", "-o", str(tmp_path / "out")) if where == "output" else ()
    d = tmp_path if where == "output" else cache_entry(tmp_path, fix).parent
    p = stopped_relink(fix, env, stopper, *extra)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=20)
    stale = [x for x in d.iterdir() if ".tmp." in x.name]
    assert stale, "SIGKILL leaves the temp file (nothing can remove it then)"
    if where == "cache":   # another seed's relink cleans the directory too
        r = fgk("relink", fix / "relocs.elf", "--seed", SEED2, env=env)
    else:
        r = fgk("relink", fix / "relocs.elf", "--seed", SEED, *extra, env=env)
    assert r.returncode == 0, r.err
    assert not any(x.exists() for x in stale), "stale temp file not cleaned"


# ---------------------------------------------------------------- defect 9

@pytest.mark.parametrize("value,needle", [
    ("-1", "bad KERNELOFFSET"), ("+2a", "bad KERNELOFFSET"), (" 1000", "bad KERNELOFFSET"),
    ("0x1000", "bad KERNELOFFSET"), ("1" * 17, "bad KERNELOFFSET"), ("", "bad KERNELOFFSET"),
])
def test_vmcoreinfo_kerneloffset_strict(tmp_path, value, needle):
    for name, data in (("core", I.elf_core(I.vmcoreinfo(offset=value))),
                       ("kdump", I.kdump(I.vmcoreinfo(offset=value)))):
        dump = write(tmp_path / name, data)
        one_line_error(fgk("crash", "--info", dump), dump, needle)


def test_vmcoreinfo_duplicate_keys(fix, tmp_path):
    vmci = I.vmcoreinfo(seed=SEED, extra="FGKASLR_SEED=disabled\n")
    for name, data in (("core", I.elf_core(vmci)), ("kdump", I.kdump(vmci))):
        dump = write(tmp_path / name, data)
        one_line_error(fgk("crash", "--info", dump), dump, "FGKASLR_SEED= appears twice")
        one_line_error(fgk("crash", dump, fix / "fixture.elf", "-n"), dump, "appears twice")


def test_vmcoreinfo_nul_rejected_in_every_format(tmp_path):
    vmci = I.vmcoreinfo(extra="X=\0evil\n")
    for name, data in (("core", I.elf_core(vmci)), ("kdump", I.kdump(vmci)),
                       ("flat", I.flatten(I.kdump(vmci)))):
        dump = write(tmp_path / name, data)
        one_line_error(fgk("crash", "--info", dump), dump, "NUL")


# ---------------------------------------------------------------- defect 10

def fixture_symbols(fix):
    out = subprocess.run(["nm", fix / "fixture.elf"], capture_output=True, text=True).stdout
    return {f[2]: int(f[0], 16) for f in (l.split() for l in out.splitlines()) if len(f) == 3}


def test_symbolize_kernel_offset_line_wins(fix, tmp_path):
    """A frame before the "Kernel Offset:" line must not set the base offset."""
    syms = fixture_symbols(fix)
    text = (f" [<{syms['head_func'] + 0x12345000:016x}>] head_func+0x1/0x10\n"
            "Kernel Offset: 0x1c000000 from 0xffffffff81000000\n")
    f = write(tmp_path / "oops", text)
    r = fgk("symbolize", fix / "fixture.elf", f)
    assert "base offset 0x1c000000" in r.err and "Kernel Offset:" in r.err, r.err


def test_symbolize_skips_module_frames(fix, tmp_path):
    """"[<addr>] fn_tiny+0x1/0x10 [mod]" is a module's fn_tiny: it says
    nothing about the base offset, and its address is not decoded."""
    syms = fixture_symbols(fix)
    addr = syms["head_func"] + 0x2000000
    f = write(tmp_path / "oops", f" [<{addr:016x}>] head_func+0x0/0x10 [mod]\n")
    r = fgk("symbolize", fix / "fixture.elf", f)
    assert "base offset unknown" in r.err, r.err
    r = fgk("symbolize", fix / "fixture.elf", "--offset", "0x2000000", f)
    assert " = " not in r.out, r.out   # no "ADDR = head_func+..." explanation


def test_symbolize_keeps_blank_lines(fix, tmp_path):
    text = "first\n\n\nKernel Offset: disabled\n\n fn_tiny+0x1/0x10\n\nlast\n"
    f = write(tmp_path / "oops", text)
    r = fgk("symbolize", fix / "fixture.elf", f)
    assert r.returncode == 0, r.err
    assert len(r.out.splitlines()) == len(text.splitlines()), r.out
    assert [l.split(" (")[0] for l in r.out.splitlines()] == text.splitlines()


# ---------------------------------------------------------------- defect 11

def test_messages_name_the_file_or_key(fix, tmp_path):
    r = fgk("seed", "record", "--seed", SEED, "--vmlinux", fix / "fixture.elf", "--note", "a\nb")
    one_line_error(r, None, "note", "not one line of printable text")
    flat = bytearray(I.flatten(I.kdump(I.vmcoreinfo())))
    struct.pack_into(">q", flat, 4096, 1 << 62)     # first record's offset
    dump = write(tmp_path / "huge.flat", bytes(flat))
    one_line_error(fgk("crash", "--info", dump), dump, "corrupt flattened record 0")
    r = fgk("addr", fix / "fixture.elf", "--seed", SEED, "fn_tiny+0xffffffffffffffff")
    one_line_error(r, fix / "fixture.elf", "beyond the kernel image")
    r = fgk("addr", fix / "fixture.elf", "--seed", SEED, "fn_tiny+0x1000000")
    one_line_error(r, fix / "fixture.elf", "beyond the kernel image")
    ok = fgk("addr", fix / "fixture.elf", "--seed", SEED, "fn_tiny+0x1")
    assert ok.returncode == 0 and "fn_tiny+0x1" in ok.out


def test_capture_names_the_dump(tmp_path):
    """A dump whose values cannot go into a record: the dump is named."""
    vmci = I.vmcoreinfo(build_id="abc")     # odd number of digits
    dump = write(tmp_path / "core", I.elf_core(vmci))
    one_line_error(fgk("seed", "capture", "--vmcore", dump, "-o", tmp_path / "rec"), dump, "BUILD-ID")
    no_output(tmp_path, "rec")


# ---------------------------------------------------------------- defect 12

def test_control_bytes_never_echoed(fix, tmp_path):
    esc = "\x1b]0;pwned\x07"
    dump = write(tmp_path / "core", I.elf_core(I.vmcoreinfo(release="6.1" + esc)))
    one_line_error(fgk("crash", "--info", dump), dump, "control characters")
    rec = write(tmp_path / "rec", I.record(note="hi" + esc))
    one_line_error(fgk("seed", "show", rec), rec, "control characters")
    rec2 = write(tmp_path / "rec2", "seed: " + SEED + "\nbogus" + esc + "\n")
    one_line_error(fgk("seed", "show", rec2), rec2, "\\x1b")
    one_line_error(fgk("layout", fix / "fixture.elf", "--seed", "zz" + esc), None, "non-hex")


# ---------------------------------------------------------------- defect 13

def test_overlap_check_does_not_wrap(fix, tmp_path):
    e = I.Elf64((fix / "fixture.elf").read_bytes())
    e.set_shdr(e.find(".bss"), size=1 << 62)
    bad = write(tmp_path / "vmlinux", e.bytes())
    one_line_error(fgk("layout", bad, "--seed", SEED), bad, "wraps around the address space")


# ---------------------------------------------------------------- the matrix

def hostile_vmlinuxes(fix):
    good = (fix / "fixture.elf").read_bytes()
    relocs = (fix / "relocs.elf").read_bytes()
    e = I.Elf64(good)
    shoff = e.shoff
    out = {
        "empty": b"",
        "text": b"this is not an ELF file\n",
        "elf-magic-only": good[:16],
        "truncated-header": good[:40],
        "truncated-sections": good[:shoff + 100],
        "cut-half": good[:len(good) // 2],
        "sht-null-wild": section_null_wild(fix),
        "elf32": good[:4] + b"\x01" + good[5:],
        "big-endian": good[:5] + b"\x02" + good[6:],
    }
    e2 = I.Elf64(good)
    e2.set_shdr(e2.find(".symtab"), offset=len(good) - 8)
    out["symtab-past-end"] = e2.bytes()
    e3 = I.Elf64(good)
    e3.set_shdr(e3.find(".symtab"), link=0xfff0)
    out["symtab-bad-link"] = e3.bytes()
    b = bytearray(good)
    struct.pack_into("<H", b, 0x3e, 0xfff0)      # e_shstrndx
    out["bad-shstrndx"] = bytes(b)
    b = bytearray(good)
    struct.pack_into("<Q", b, 0x28, 1 << 62)     # e_shoff
    out["shoff-huge"] = bytes(b)
    e4 = I.Elf64(relocs)
    e4.set_shdr(rela_of(e4, ".text.fn_small"), info=0)
    out["rela-info0"] = e4.bytes()
    return out


def matrix_commands():
    return [
        ("layout", ["layout", "{v}", "--seed", SEED]),
        ("map", ["map", "{v}", "--seed", SEED, "-o", "{o}"]),
        ("addr", ["addr", "{v}", "--seed", SEED, "fn_tiny"]),
        ("relink", ["relink", "{v}", "--seed", SEED, "-o", "{o}"]),
        ("relink-no-cache", ["relink", "{v}", "--seed", SEED, "--no-cache", "-o", "{o}"]),
        ("symbolize", ["symbolize", "{v}", "{t}"]),
        ("seed-record", ["seed", "record", "--seed", SEED, "--vmlinux", "{v}", "-o", "{o}"]),
        ("seed-show", ["seed", "show", "{r}", "--vmlinux", "{v}"]),
        ("capture-oops", ["seed", "capture", "--oops", "{t}", "--vmlinux", "{v}", "-o", "{o}"]),
        ("crash", ["crash", "{d}", "{v}", "--crash", "echo", "-q"]),
    ]


def test_matrix_hostile_vmlinux(fix, tmp_path, env):
    """Every command that reads a vmlinux x every hostile vmlinux.  (A
    vmlinux that is fine for a command, like rela-info0 for layout, must
    succeed instead; nothing in between.)"""
    text = write(tmp_path / "oops.txt", I.oops([(0xffffffff9d000045, "fn_tiny+0x5/0x10")])
                 + f"fgkaslr_seed={SEED}\n".encode())
    rec = write(tmp_path / "rec", I.record(seed=SEED, build_id=None))
    dump = write(tmp_path / "vmcore", I.elf_core(I.vmcoreinfo(build_id=None, seed=SEED)))
    work = tmp_path / "w"
    work.mkdir()
    counts = {"error": 0, "ok": 0}
    for vname, data in hostile_vmlinuxes(fix).items():
        v = write(work / f"{vname}.elf", data)
        for cname, cmd in matrix_commands():
            args = [a.format(v=v, o=work / "out", t=text, r=rec, d=dump) for a in cmd]
            r = fgk(*args, env=env)
            if r.returncode == 0:
                assert vname == "rela-info0" and cname not in ("relink", "relink-no-cache", "crash"), \
                    (vname, cname, r.err)
                counts["ok"] += 1
                (work / "out").unlink(missing_ok=True)
                continue
            one_line_error(r, v)
            no_output(work, "out")
            counts["error"] += 1
    print(counts)
    assert counts["error"] >= 13 * 9


def hostile_dumps():
    good = I.kdump(I.vmcoreinfo())
    core = I.elf_core(I.vmcoreinfo())
    out = {
        "empty": b"", "text": b"hello\n", "kdump-sig-only": b"KDUMP   ",
        "kdump-header-cut": good[:300], "kdump-cut": good[:len(good) // 2],
        "kdump-note-huge": I.kdump(I.vmcoreinfo(), size_note=1 << 40),
        "kdump-nul": I.kdump(I.vmcoreinfo(extra="A=\0b\n")),
        "flat-sig-only": b"makedumpfile", "flat-no-end": I.flatten(good, end_marker=False),
        "flat-cut": I.flatten(good)[:-5000],
        "core-cut": core[:len(core) - 100],
        "core-phdr-huge": core[:0x20] + struct.pack("<Q", 1 << 60) + core[0x28:],
        "core-dup": I.elf_core(I.vmcoreinfo(extra="KERNELOFFSET=0\n")),
        "core-offset": I.elf_core(I.vmcoreinfo(offset="-1")),
        "core-esc": I.elf_core(I.vmcoreinfo(release="\x1b[2J")),
        "core-vmlinux": None,
    }
    return out


def test_matrix_hostile_dumps(fix, tmp_path, env):
    cmds = [["crash", "--info", "{d}"], ["crash", "{d}", "{v}", "-n"],
            ["seed", "capture", "--vmcore", "{d}", "-o", "{o}"],
            ["seed", "capture", "--vmcore", "{d}", "--vmlinux", "{v}", "-o", "{o}"]]
    work = tmp_path / "w"
    work.mkdir()
    n = 0
    for name, data in hostile_dumps().items():
        d = work / name
        if data is None:       # a vmlinux given as the dump
            d.write_bytes((fix / "fixture.elf").read_bytes())
        else:
            d.write_bytes(data)
        for cmd in cmds:
            args = [a.format(d=d, v=fix / "fixture.elf", o=work / "out") for a in cmd]
            one_line_error(fgk(*args, env=env), d)
            no_output(work, "out")
            n += 1
    assert n == 16 * 4


def test_matrix_hostile_text(fix, tmp_path, env):
    """Records and seed text: one line naming the file, every time."""
    work = tmp_path / "w"
    work.mkdir()
    cases = {
        "empty": b"", "nul": b"seed: " + b"0" * 64 + b"\0\n",
        "bad-key": b"seed: " + SEED.encode() + b"\nwho: me\n",
        "dup": I.record() + b"seed: " + SEED.encode() + b"\n",
        "esc-note": I.record(note="\x1b[31mred"), "cr-only": b"seed: " + SEED.encode() + b"\rnote: x\n",
        "odd-build-id": I.record(build_id="abc"), "offset-noprefix": I.record(offset=None) + b"offset: 1000\n",
        "huge": b"#" * (2 << 20),
    }
    for name, data in cases.items():
        f = write(work / name, data)
        for args in (["seed", "show", f], ["layout", fix / "fixture.elf", "--seed-file", f],
                     ["seed", "record", "--seed-file", f, "--vmlinux", fix / "fixture.elf", "-o", work / "out"]):
            one_line_error(fgk(*args, env=env), f)
            no_output(work, "out")
    for name in ("empty", "nul", "huge"):
        f = work / name
        one_line_error(fgk("seed", "capture", "--text", f, "-o", work / "out"), f)
        no_output(work, "out")


# ------------------------------------------- spec §3 version 2: two domains

SCHED_BAD = {
    "sched-v4.elf": ("vmlinux uses FG-KASLR layout version 4; this libfgk knows 1-3",),
    "sched-vrel.elf": ("__fgkaslr_layout_version is not an absolute symbol",
                       "layout version is unknown"),
    "sched-overlap.elf": ("not laid out for FG-KASLR", "the .sched.text.* region",
                          "overlaps the .text.* region"),
    "sched-nogap.elf": ("not laid out for FG-KASLR", "no gap between __sched_text_start"),
    "sched-d1gap.elf": ("not laid out for FG-KASLR", "the .sched.text.* region",
                        "has no gap before the .text.* region"),
    # spec §3 version 3: the range domains (domains.lds.in)
    "domains-v4.elf": ("vmlinux uses FG-KASLR layout version 4; this libfgk knows 1-3",),
    "domains-beyond.elf": ("not laid out for FG-KASLR",
                           "section .spinlock.text.kernel/locking/spinlock.o",
                           "extends beyond __lock_text_end"),
    "domains-nolimit.elf": ("2 .static_call.text.* sections but no "
                            "__static_call_text_end symbol",),
}


@pytest.mark.parametrize("name", sorted(SCHED_BAD))
def test_sched_domain_refused(fix, tmp_path, env, name):
    """A vmlinux (linked by layout-tools/tests/fixtures/build.sh from
    sched.lds.in) whose .sched.text.* domain overlaps the .text.* one, or
    lacks the byte before it or before its first section, or that has a
    layout version this libfgk does not know: one line naming the file, for
    every command that lays it out."""
    v = fix / name
    out = tmp_path / "out"
    for cmd in (["layout", v, "--seed", SEED],
                ["map", v, "--seed", SEED, "-o", out],
                ["addr", v, "--seed", SEED, "fixture_schedule"],
                ["relink", v, "--seed", SEED, "--no-cache", "-o", out]):
        r = fgk(*cmd, env=env)
        one_line_error(r, v, *SCHED_BAD[name])
        no_output(tmp_path, "out")


def test_sched_domain_versions(fix):
    """sched.elf (version 2) shuffles its three .sched.text.* sections inside
    [__sched_text_start, __sched_text_end) with the nonce fgkaslr-schd;
    sched-v1.elf, the same link without __fgkaslr_layout_version, leaves them
    at their link addresses and lays out .text.* exactly as sched.elf does."""
    def layout(name, seed):
        r = fgk("layout", fix / name, "--seed", seed, "--json")
        assert r.returncode == 0, r.err
        import json
        return json.loads(r.stdout)["sections"]
    moved = 0
    for seed in (SEED, SEED2, "00" * 32, "ff" * 32):
        v2, v1 = layout("sched.elf", seed), layout("sched-v1.elf", seed)
        d0 = [s for s in v2 if s["name"].startswith(".sched.text.")]
        assert len(d0) == 3 and not any(s["name"].startswith(".sched.text.") for s in v1)
        assert [s for s in v2 if s["name"].startswith(".text.")] == v1
        moved += sum(s["new"] != s["link"] for s in d0)
    assert moved > 0


def test_cache_entry_with_sched_sections_unmoved_is_relinked(fix, tmp_path, env):
    """A vmlinux.fgk of sched.elf whose .sched.text.* sections sit at their
    link addresses (what an fgk that did not know the domain wrote) passes
    every structural check, but not the seed's layout: it is relinked."""
    bid = subprocess.run(["readelf", "-n", fix / "sched.elf"], capture_output=True,
                         text=True).stdout.split("Build ID: ")[1].split()[0]
    entry = tmp_path / "cache" / bid / f"{SEED}.vmlinux.fgk"
    ref = tmp_path / "ref"
    r = fgk("relink", fix / "sched.elf", "--seed", SEED, "--no-cache", "-o", ref, env=env)
    assert r.returncode == 0, r.err
    vm, e = I.Elf64((fix / "sched.elf").read_bytes()), I.Elf64(ref.read_bytes())
    moved = 0
    for i in range(1, len(e.sections())):
        name = e.name(i)
        if name.startswith(".sched.text."):
            link = vm.shdr(vm.find(name))["addr"]
            moved += e.shdr(i)["addr"] != link
            e.set_shdr(i, addr=link)
    assert moved
    entry.parent.mkdir(parents=True)
    entry.write_bytes(e.bytes())
    r = fgk("relink", fix / "sched.elf", "--seed", SEED, "--stats", env=env)
    assert r.returncode == 0, r.err
    assert "cached" not in r.err, r.err
    assert entry.read_bytes() == ref.read_bytes()
    r = fgk("relink", fix / "sched.elf", "--seed", SEED, "--stats", env=env)
    assert "cached" in r.err, r.err
