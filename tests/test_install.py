"""fgk installed as a Debian user gets it: `make deb`, the packages unpacked
into a throwaway root, and the tools run from there rather than the tree.

Why a throwaway root (dpkg-deb -x into a temporary directory) and not
`dpkg -i` + purge on this machine: the machine is shared by tests that
assert fgk is NOT on /usr/bin (tests/test_gdb.py) and by every gdb session,
which would load an installed fgk-gdb.  The unpacked root is exactly the
packages' files; what dpkg would add (ldconfig's cache, Python's sys.path,
gdb's data directory) is given explicitly: LD_LIBRARY_PATH, PYTHONPATH, and
a gdb data directory made of Debian's own plus the fgk-gdb package's file.

1. `make deb` (DEB_BUILD_OPTIONS=nocheck: the C tests it would rerun are
   `make check-unit`'s) builds the five packages from the files git knows,
   in a copy without build/ (what a fresh clone has); lintian passes with
   no error or warning (overrides carry their reason in debian/).
2. The installed fgk links libfgk.so.1 with no RUNPATH, runs only with the
   packaged library, and passes tests/test_hostile.py (FGK_BIN).
3. Without a vmlinux it looks where gdb and crash look and says so in one
   line; never in a build tree.
4. `man fgk-map` renders; every command of `fgk help` has its page.
5. pkg-config compiles and links libfgk(3)'s EXAMPLE against the packaged
   header and library; it prints the build-id readelf reads.
6. `import libfgk` from / gets the packaged module and library.
7. gdb with no `source` line has the fgk commands; with a kernel, `fgk
   attach` on a guest halted at reset loads the layout and a hardware
   breakpoint on a shuffled function stops where `fgk addr` (installed)
   says the kernel put it.
8. `make install DESTDIR=... && make uninstall` leaves nothing behind.
"""
import gzip
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time

import pytest

from conftest import KERNEL_DIR, REPO, guest, kernel_missing_reason

PACKAGES = ("libfgk1", "libfgk-dev", "fgk", "python3-libfgk", "fgk-gdb")
MULTIARCH = subprocess.run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"],
                           capture_output=True, text=True).stdout.strip()
EARLY_FUNC = "vprintk_emit"     # first printk of start_kernel; shuffled


from oracle import run  # noqa: E402


def missing_tools():
    for t in ("dpkg-buildpackage", "dh", "lintian", "pandoc", "man", "gdb", "pkg-config"):
        if not shutil.which(t):
            return f"{t} not installed: run 'make deps'"
    return None


@pytest.fixture(scope="module")
def debs():
    why = missing_tools()
    if why:
        pytest.skip(why)
    env = dict(os.environ, DEB_BUILD_OPTIONS="nocheck")
    t0 = time.monotonic()
    r = run("nice", "make", "-s", "deb", cwd=REPO, env=env, timeout=1800)
    print(f"make deb: {time.monotonic() - t0:.0f} s")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = REPO / "build" / "deb"
    found = {}
    for p in PACKAGES:
        m = list(out.glob(f"{p}_*.deb"))
        assert len(m) == 1, f"{p}: {m}"
        found[p] = m[0]
    changes = list(out.glob("fgk_*.changes"))
    assert len(changes) == 1, changes
    found["changes"] = changes[0]
    return found


@pytest.fixture(scope="module")
def root(debs, tmp_path_factory):
    """The packages unpacked into a fresh directory, and the environment that
    stands for what dpkg's triggers would set up."""
    d = tmp_path_factory.mktemp("root")
    for p in PACKAGES:
        r = run("dpkg-deb", "-x", debs[p], d)
        assert r.returncode == 0, r.stderr
    libdir = d / "usr" / "lib" / MULTIARCH
    env = dict(os.environ, LD_LIBRARY_PATH=str(libdir),
               PYTHONPATH=f"{d}/usr/share/fgk-gdb:{d}/usr/lib/python3/dist-packages",
               PATH=f"{d}/usr/bin:/usr/bin:/bin", DEBUGINFOD_URLS="")
    env.pop("FGK_LIBFGK", None)
    return {"dir": d, "libdir": libdir, "env": env, "fgk": d / "usr" / "bin" / "fgk"}


def test_packages_and_lintian(debs):
    r = run("lintian", "--fail-on", "error,warning", "--pedantic", debs["changes"], timeout=600)
    print(r.stdout, r.stderr)
    assert r.returncode == 0, r.stdout
    assert not re.search(r"^[EW]: ", r.stdout, re.M), r.stdout
    field = {p: run("dpkg-deb", "-f", debs[p], "Depends").stdout for p in PACKAGES}
    # ${shlibs:Depends}: the CLI on the library through its symbols file
    assert re.search(r"\blibfgk1 \(>= [0-9.]+\)", field["fgk"]), field["fgk"]
    assert "libdw1" in field["libfgk1"] and "libelf1" in field["libfgk1"], field["libfgk1"]
    assert "python3:any" in field["python3-libfgk"] and "gdb" in field["fgk-gdb"], field
    r = run("dpkg-deb", "-I", debs["libfgk1"], "symbols")
    assert r.returncode == 0 and "libfgk.so.1 libfgk1" in r.stdout, r.stdout + r.stderr
    # every exported function is in the symbols file, with its version
    nm = run("nm", "-D", "--defined-only", REPO / "build" / "lib" / "libfgk.so.1").stdout
    exported = {m.group(1) for m in re.finditer(r" T (fgk_\w+)@@FGK_1$", nm, re.M)}
    listed = set(re.findall(r"^ (fgk_\w+)@FGK_1 ", r.stdout, re.M))
    assert exported and exported <= listed, sorted(exported - listed)


def test_installed_fgk_uses_the_packaged_library(root):
    fgk = root["fgk"]
    dyn = run("readelf", "-d", fgk).stdout
    assert "Shared library: [libfgk.so.1]" in dyn, dyn
    assert "RUNPATH" not in dyn and "RPATH" not in dyn, dyn
    assert "SONAME" in run("readelf", "-d", root["libdir"] / "libfgk.so.1").stdout
    ldd = run("ldd", fgk, env=root["env"]).stdout
    assert f"libfgk.so.1 => {root['libdir']}/libfgk.so.1" in ldd, ldd
    if not os.path.exists(f"/usr/lib/{MULTIARCH}/libfgk.so.1"):
        r = run(fgk, "--version", env=dict(os.environ, LD_LIBRARY_PATH=""))
        assert r.returncode != 0 and "libfgk.so.1" in r.stderr, r.stderr
    r = run(fgk, "--version", env=root["env"])
    assert r.returncode == 0 and r.stdout.startswith("fgk "), r.stdout + r.stderr


def test_installed_fgk_hostile_inputs(root):
    """tests/test_hostile.py, every command on broken inputs, against the
    installed fgk and library."""
    env = dict(root["env"], FGK_BIN=str(root["fgk"]))
    r = run("/usr/bin/python3", "-m", "pytest", "-p", "no:cacheprovider", "-q",
            "-c", REPO / "tests" / "pytest.ini", REPO / "tests" / "test_hostile.py",
            cwd=REPO, env=env, timeout=900)
    print(r.stdout[-2000:])
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert re.search(r"\d+ passed", r.stdout)


def test_vmlinux_lookup_where_gdb_and_crash_look(root, tmp_path):
    """No vmlinux: one line naming the build-id and every place looked at,
    the system's debug paths, never a build tree."""
    fgk, env = root["fgk"], root["env"]
    seed = run(fgk, "seed", "random", env=env).stdout.strip()
    bid = "%040x" % random.getrandbits(160)
    rec = tmp_path / "r.seed"
    rec.write_text(f"seed: {seed}\nbuild-id: {bid}\nrelease: 9.9.9-nosuch\n")
    for args in (["map", "--build-id", bid, "--seed", seed], ["map", "--seed-file", rec]):
        r = run(fgk, *args, cwd=tmp_path, env=env)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 1 and len(lines) == 1, r.stderr
        assert f"no vmlinux with build-id {bid} in " in lines[0], lines[0]
        assert f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug" in lines[0]
        assert "build/kernel" not in lines[0] and "DEBUGINFOD_URLS" in lines[0], lines[0]
        assert r.stdout == ""
    for p in ("/usr/lib/debug/boot/vmlinux-9.9.9-nosuch",
              "/usr/lib/debug/lib/modules/9.9.9-nosuch/vmlinux",
              "/lib/modules/9.9.9-nosuch/build/vmlinux"):
        assert p in lines[0], lines[0]


def test_crash_finds_vmlinux_beside_the_dump_not_in_a_tree(root, elf_fixtures, tmp_path):
    """`fgk crash DUMP` without VMLINUX (issue: a copied or installed fgk
    looked in the tree it was built in, and failed in two lines): the
    vmlinux with the dump's build-id beside the dump is used; with none
    anywhere, one line names the build-id and every place looked at."""
    sys.path.insert(0, str(REPO / "layout-tools" / "fuzz"))
    import inputs as I
    elf = elf_fixtures / "relocs.elf"
    bid = re.search(r"Build ID: ([0-9a-f]+)", run("readelf", "-n", elf).stdout).group(1)
    seed = "%064x" % random.getrandbits(256)
    env = dict(root["env"], TMPDIR=str(tmp_path), FGK_CACHE_DIR=str(tmp_path / "cache"))
    (tmp_path / "d").mkdir()
    (tmp_path / "work").mkdir()
    dump = tmp_path / "d" / "vmcore"
    dump.write_bytes(I.elf_core(I.vmcoreinfo(release="9.9.9-nosuch", build_id=bid, seed=seed)))
    r = run(root["fgk"], "crash", "-n", "-q", dump, cwd=tmp_path / "work", env=env)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1, r.stderr
    for place in (f"{tmp_path}/d/vmlinux", "vmlinux", f"/usr/lib/debug/.build-id/{bid[:2]}/",
                  "/usr/lib/debug/boot/vmlinux-9.9.9-nosuch",
                  "/usr/lib/debug/lib/modules/9.9.9-nosuch/vmlinux",
                  "/lib/modules/9.9.9-nosuch/build/vmlinux"):
        assert place in lines[0], (place, lines[0])
    assert f"build-id {bid}" in lines[0] and "build/kernel" not in lines[0], lines[0]
    shutil.copy(elf, tmp_path / "d" / "vmlinux")
    r = run(root["fgk"], "crash", "-n", "-q", dump, cwd=tmp_path / "work", env=env)
    assert r.returncode == 0, r.stderr
    # the command crash would run: that vmlinux, relinked for the dump's seed
    assert f"{tmp_path}/cache/{bid}/{seed}.vmlinux.fgk {dump}" in r.stdout, r.stdout


def test_man_pages(root):
    man1 = root["dir"] / "usr" / "share" / "man" / "man1"
    env = dict(root["env"], MANPATH=str(root["dir"] / "usr" / "share" / "man"),
               MANWIDTH="80", MANPAGER="cat", PAGER="cat")
    r = run("man", "-w", "fgk-map", env=env)
    assert r.returncode == 0 and r.stdout.strip() == str(man1 / "fgk-map.1.gz"), r.stdout + r.stderr
    r = run("man", "fgk-map", env=env)
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert re.search(r"^NAME\n\s+fgk-map - the randomized symbol list$", text, re.M), text[:500]
    assert re.search(r"^SYNOPSIS\n\s+fgk map \[VMLINUX\]", text, re.M), text[:800]
    assert "```" not in text and "\n## " not in text, "raw Markdown in the page"
    # roff, not Markdown, in the file itself
    roff = gzip.open(man1 / "fgk-map.1.gz", "rt").read()
    assert re.search(r'^\.TH "FGK-MAP" "1" ', roff, re.M) and "\n## " not in roff, roff[:400]
    out = run(root["fgk"], "help", env=root["env"]).stdout
    cmds = [c for c in re.findall(r"^  (\S+) ", out, re.M) if c != "help"]
    assert cmds
    for c in cmds + [None]:
        page = man1 / (f"fgk-{c}.1.gz" if c else "fgk.1.gz")
        assert page.is_file(), f"no man page for 'fgk {c}'"
    r = run("man", "-l", root["dir"] / "usr/share/man/man3/libfgk.3.gz", env=env)
    assert r.returncode == 0 and "fgk_vmlinux_open" in r.stdout, r.stderr


def example_source():
    """The EXAMPLE program of libfgk(3), from its one source."""
    md = (REPO / "docs" / "libfgk.3.md").read_text()
    block = md.split("## EXAMPLE\n", 1)[1].split("\n## ", 1)[0]
    return "\n".join(line[4:] for line in block.splitlines()) + "\n"


def test_pkg_config_builds_the_example(root, tmp_path):
    d = root["dir"]
    env = dict(root["env"], PKG_CONFIG_PATH=str(root["libdir"] / "pkgconfig"),
               PKG_CONFIG_SYSROOT_DIR=str(d))
    r = run("pkg-config", "--cflags", "--libs", "libfgk", env=env)
    assert r.returncode == 0, r.stderr
    flags = r.stdout.split()
    assert f"-I{d}/usr/include" in flags and "-lfgk" in flags, flags
    (tmp_path / "ex.c").write_text(example_source())
    exe = tmp_path / "ex"
    r = run("cc", "-Wall", "-Werror", "-Wl,--build-id", "-o", exe, tmp_path / "ex.c", *flags,
            env=env)
    assert r.returncode == 0, r.stderr
    assert "Shared library: [libfgk.so.1]" in run("readelf", "-d", exe).stdout
    want = re.search(r"Build ID: ([0-9a-f]+)", run("readelf", "-n", exe).stdout).group(1)
    r = run(exe, exe, env=env)
    assert r.returncode == 0 and r.stdout.strip() == want, r.stdout + r.stderr
    r = run(exe, tmp_path / "ex.c", env=env)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "ex.c" in r.stderr, r.stderr


def test_python_binding_from_root_dir(root):
    code = ("import libfgk, json\n"
            "s = libfgk.random_seed()\n"
            "maps = [l.split()[-1] for l in open('/proc/self/maps') if 'libfgk' in l]\n"
            "print(json.dumps([libfgk.__file__, s == libfgk.format_seed(libfgk.parse_seed(s)),"
            " sorted(set(maps))]))\n")
    r = run("/usr/bin/python3", "-c", code, cwd="/", env=root["env"])
    assert r.returncode == 0, r.stderr
    path, roundtrip, maps = json.loads(r.stdout)
    assert path == f"{root['dir']}/usr/lib/python3/dist-packages/libfgk/__init__.py"
    assert roundtrip and maps == [f"{root['libdir']}/libfgk.so.1"], maps


def gdb_datadir(root, tmp_path):
    """Debian's gdb data directory plus what the fgk-gdb package puts in it."""
    d = tmp_path / "gdb"
    r = run("gdb", "-nx", "-batch", "-ex", "show data-directory")
    system = re.search(r'"(.*)"', r.stdout).group(1)
    shutil.copytree(system, d, symlinks=True, copy_function=os.symlink)
    rel = "python/gdb/command/fgk.py"
    os.symlink(root["dir"] / "usr/share/gdb" / rel, d / rel)
    return d


def test_gdb_has_fgk_commands_without_source(root, tmp_path):
    d = gdb_datadir(root, tmp_path)
    r = run("gdb", "-nx", "-batch", "-data-directory", d, "-ex", "help fgk attach",
            "-ex", "python import fgkgdb, libfgk; print(fgkgdb.__file__); print(libfgk.__file__)",
            cwd="/", env=root["env"], timeout=300)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "fgk attach" in r.stdout, r.stdout
    files = r.stdout.strip().splitlines()[-2:]
    assert files == [f"{root['dir']}/usr/share/fgk-gdb/fgkgdb/__init__.py",
                     f"{root['dir']}/usr/lib/python3/dist-packages/libfgk/__init__.py"], files
    # and without the package's file, gdb has no such command: the data
    # directory is what gives it
    r = run("gdb", "-nx", "-batch", "-ex", "help fgk attach", cwd="/", env=root["env"])
    assert "Undefined command" in r.stderr or "undefined" in r.stderr.lower(), r.stdout + r.stderr


def test_gdb_attach_installed(root, tmp_path):
    """`gdb vmlinux` then `fgk attach`: QEMU halted at reset, the layout of
    a random seed loaded before boot; the kernel stops at a hardware
    breakpoint on a shuffled function exactly where the installed fgk says
    that seed puts it."""
    why = kernel_missing_reason()
    if why:
        pytest.skip(why)
    vmlinux = KERNEL_DIR / "vmlinux"
    env = dict(root["env"], FGK_CACHE_DIR=str(tmp_path / "cache"))
    seed = "%064x" % random.getrandbits(256)
    r = run(root["fgk"], "addr", vmlinux, "--seed", seed, "--offset", "0", "--json",
            EARLY_FUNC, env=env)
    assert r.returncode == 0, r.stderr
    item = json.loads(r.stdout.splitlines()[0])
    if not item["section"].startswith(".text."):
        pytest.skip(f"{EARLY_FUNC} is not in a .text.* section of this vmlinux")
    want = int(item["runtime"], 16)
    d = gdb_datadir(root, tmp_path)
    g = guest(f'grep " {EARLY_FUNC}$" /proc/kallsyms\n', profile="debug", seed=seed,
              gdb=0, wait_gdb=True, timeout=900)
    port = g.gdb_port
    g.start()
    try:
        time.sleep(1)
        r = run("gdb", "-nx", "-batch", "-data-directory", d, "-ex", "set pagination off",
                vmlinux, "-ex", f"target remote 127.0.0.1:{port}",
                "-ex", f"fgk attach --seed {seed} --offset 0",
                "-ex", f"hbreak {EARLY_FUNC}", "-ex", "continue", "-ex", "p/x $pc",
                "-ex", "detach", cwd=tmp_path, env=env, timeout=900)
    finally:
        g.kill()
    print(r.stdout[-3000:], r.stderr[-2000:])
    assert "fgk attach:" not in r.stderr, r.stderr
    assert re.search(r"loaded \S+ at offset 0x0 \(\d+ shuffled sections\)", r.stdout), r.stdout
    pc = int(re.search(r"^\$1 = (0x[0-9a-f]+)$", r.stdout, re.M).group(1), 16)
    # hbreak sits after the prologue: within the function, at or after its start
    assert want <= pc < want + int(item["size"], 16), (hex(pc), hex(want))


def test_make_install_uninstall(tmp_path):
    dest = tmp_path / "dest"
    args = ["make", "-s", "install", "PREFIX=/usr/local", f"DESTDIR={dest}"]
    r = run(*args, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if not p.is_dir())
    py = next(p for p in files if p.endswith("libfgk/__init__.py"))
    assert re.fullmatch(r"usr/local/lib/python3\.\d+/dist-packages/libfgk/__init__.py", py)
    for f in ("usr/local/bin/fgk", "usr/local/lib/libfgk.so.1", "usr/local/lib/libfgk.so",
              "usr/local/include/fgk/fgk.h", "usr/local/lib/pkgconfig/libfgk.pc",
              "usr/local/share/man/man1/fgk-map.1", "usr/local/share/man/man3/libfgk.3",
              "usr/local/share/fgk-gdb/fgkgdb/commands.py",
              "usr/share/gdb/python/gdb/command/fgk.py"):
        assert f in files, files
    loader = (dest / "usr/share/gdb/python/gdb/command/fgk.py").read_text()
    assert '"/usr/local/share/fgk-gdb"' in loader
    assert "prefix=/usr/local" in (dest / "usr/local/lib/pkgconfig/libfgk.pc").read_text()
    r = run(*args, cwd=REPO)
    assert r.returncode != 0 and "make uninstall" in r.stderr, r.stderr
    r = run("make", "-s", "uninstall", "PREFIX=/usr/local", f"DESTDIR={dest}", cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert not dest.exists(), sorted(map(str, dest.rglob("*")))
