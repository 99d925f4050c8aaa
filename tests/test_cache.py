"""The relink cache: one libfgk function for every tool, bounded as
libdebuginfod bounds its client cache.

fgk_relink_through_cache() (through the binding and `fgk relink`) on the
real build/kernel/vmlinux; eviction is checked on real files whose atimes
and mtimes are set back with os.utime, with the control files
cache_clean_interval_s and max_unused_age_s of debuginfod-client-config(7)
(defaults 86400 and 604800 seconds), nothing mocked.  One real relink
(~200 MB) is made per module into a shared cache; each test copies the
layout of that cache it needs.
"""
import os
import shutil
import time

import pytest

import libfgk
from oracle import run
from test_oracle import FGK, VMLINUX, require_fgkaslr_vmlinux

SEED = "c4" * 32
DAY = 86400
WEEK = 7 * DAY


@pytest.fixture(scope="module")
def entry(tmp_path_factory):
    """(cache dir, path of the real cache entry) after one `fgk relink`."""
    require_fgkaslr_vmlinux()
    cache = tmp_path_factory.mktemp("fgk-cache")
    r = run(FGK, "relink", VMLINUX, "--seed", SEED,
            env=dict(os.environ, FGK_CACHE_DIR=str(cache)))
    assert r.returncode == 0, r.stderr
    path = r.stdout.strip()
    assert path.startswith(str(cache)) and os.path.isfile(path)
    yield cache, path
    shutil.rmtree(cache, ignore_errors=True)


def use(cache):
    """A use of the cache: a hit of the real entry (no relink)."""
    r = run(FGK, "relink", VMLINUX, "--seed", SEED, "--stats",
            env=dict(os.environ, FGK_CACHE_DIR=str(cache)))
    assert r.returncode == 0, r.stderr
    assert "fgk relink: cached " in r.stderr, r.stderr
    return r.stdout.strip()


def set_back(path, seconds):
    t = time.time() - seconds
    os.utime(path, (t, t))


def fake_entry(cache, build_id, age):
    """A file named as a cache entry, unused (atime and mtime) for age s."""
    d = cache / build_id
    d.mkdir(exist_ok=True)
    f = d / ("ab" * 32 + ".vmlinux.fgk")
    f.write_bytes(b"x" * 4096)
    set_back(f, age)
    return f


def test_control_files_default(entry):
    cache, _ = entry
    use(cache)
    # debuginfod-client-config(7): created with the defaults when missing
    assert (cache / "cache_clean_interval_s").read_text().split() == ["86400"]
    assert (cache / "max_unused_age_s").read_text().split() == ["604800"]


def test_eviction_when_due(entry):
    cache, path = entry
    use(cache)
    old = fake_entry(cache, "11" * 20, WEEK + 60)
    young = fake_entry(cache, "22" * 20, DAY)
    set_back(old.parent, WEEK + 60)
    # a shared cache directory: what is not ours is never touched
    stranger = cache / "notes.txt"
    stranger.write_text("mine\n")
    set_back(stranger, 10 * WEEK)
    # not due: the last cleaning (interval file's mtime) was an hour ago
    set_back(cache / "cache_clean_interval_s", 3600)
    use(cache)
    assert old.exists(), "cleaned before cache_clean_interval_s passed"
    # due
    set_back(cache / "cache_clean_interval_s", DAY + 60)
    set_back(old.parent, WEEK + 60)
    use(cache)
    assert not old.exists(), "entry unused for more than max_unused_age_s kept"
    assert not old.parent.exists(), "its empty old build-id directory kept"
    assert young.exists(), "entry used a day ago removed"
    assert stranger.exists(), "a file that is not a cache entry removed"
    assert os.path.exists(path)
    # the cleaning is recorded: the interval file's mtime is now
    assert time.time() - os.stat(cache / "cache_clean_interval_s").st_mtime < 120
    young.unlink()
    young.parent.rmdir()
    stranger.unlink()


def test_hit_counts_as_use(entry):
    """The entry in use is not evicted, whatever the mount's atime policy:
    a hit sets its atime before the cleaning."""
    cache, path = entry
    set_back(path, WEEK + 60)
    set_back(cache / "cache_clean_interval_s", DAY + 60)
    assert use(cache) == path
    assert os.path.exists(path)
    assert time.time() - os.stat(path).st_atime < 120


def test_settings_are_read(entry):
    """max_unused_age_s and cache_clean_interval_s as the user wrote them."""
    cache, _ = entry
    (cache / "max_unused_age_s").write_text("3600\n")
    f = fake_entry(cache, "33" * 20, 2 * 3600)
    (cache / "cache_clean_interval_s").write_text("0\n")   # every use
    use(cache)
    assert not f.exists(), "max_unused_age_s=3600 not applied"
    f = fake_entry(cache, "33" * 20, 2 * 3600)
    (cache / "max_unused_age_s").write_text("-1\n")        # keep everything
    use(cache)
    assert f.exists(), "negative max_unused_age_s evicted an entry"
    f.unlink()
    (cache / "max_unused_age_s").write_text("604800\n")
    (cache / "cache_clean_interval_s").write_text("86400\n")


def test_through_cache_binding(entry, tmp_path, monkeypatch):
    """fgk_relink_through_cache: the hit, the dry run (nothing written) and
    the fallback directory when the cache cannot be written."""
    cache, path = entry
    vm = libfgk.Vmlinux(str(VMLINUX))
    layout = vm.layout(SEED)
    monkeypatch.setenv("FGK_CACHE_DIR", str(cache))
    r = layout.relink_through_cache(str(tmp_path / "fb"))
    assert (r["path"], r["cached"], r["in_cache"], r["written"]) == (path, True, True, False)
    assert not (tmp_path / "fb").exists()

    # a cache that cannot be made (its parent is a file): the fallback
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("FGK_CACHE_DIR", str(blocker / "cache"))
    fb = tmp_path / "fb"
    d = layout.relink_through_cache(str(fb), dry_run=True)
    assert d["path"] == str(blocker / "cache" / vm.build_id / (SEED + ".vmlinux.fgk"))
    assert not d["written"] and not d["cached"]
    assert not fb.exists(), "a dry run made the fallback directory"
    r = layout.relink_through_cache(str(fb))
    assert r["path"] == str(fb / (SEED + ".vmlinux.fgk")) and r["written"]
    assert not r["in_cache"] and r["cache_error"], r
    assert (os.stat(fb).st_mode & 0o777) == 0o700
    assert r["stats"]["sections_moved"] > 0
    assert open(r["path"], "rb").read() == open(path, "rb").read()
    # no fallback given: the error, nothing written
    with pytest.raises(libfgk.FgkError):
        layout.relink_through_cache(None)


def section_symbols(path):
    """{section index: [values of its STT_SECTION symbols]}, .symtab's
    sh_info and the index of its first global symbol (pyelftools)."""
    from elftools.elf.elffile import ELFFile
    with open(path, "rb") as f:
        elf = ELFFile(f)
        st = elf.get_section_by_name(".symtab")
        out, first_global = {}, None
        for i, s in enumerate(st.iter_symbols()):
            if s["st_info"]["type"] == "STT_SECTION":
                out.setdefault(s["st_shndx"], []).append(s["st_value"])
            if first_global is None and s["st_info"]["bind"] != "STB_LOCAL":
                first_global = i
        addrs = {i: elf.get_section(i)["sh_addr"] for i in range(elf.num_sections())}
        return out, addrs, st["sh_info"], first_global, st


def test_entry_has_a_section_symbol_per_section_and_an_older_one_is_relinked(entry, tmp_path):
    """vmlinux.fgk has the section symbols a linker emits, one per output
    section at its address, not one per folded randomized section (crash
    listed each as a symbol '.text.fgkaslr' and spent about 15 % of its
    start-up on them); .symtab's sh_info stays the first global.  An entry
    whose symbol table is not the one fgk relink writes (an older fgk's,
    with those symbols) is relinked, not used."""
    cache, path = entry
    syms, addrs, info, first_global, _ = section_symbols(path)
    assert syms and all(len(v) == 1 for v in syms.values()), \
        {k: len(v) for k, v in syms.items() if len(v) > 1}
    assert all(v == [addrs[k]] for k, v in syms.items() if isinstance(k, int)), syms
    assert info == first_global
    before, _, _, _, _ = section_symbols(str(VMLINUX))
    assert sum(map(len, before.values())) > sum(map(len, syms.values())) + 1000
    # an entry with a longer .symtab (as an older fgk wrote): relinked
    c = tmp_path / "cache"
    shutil.copytree(cache, c)
    copy = str(c / os.path.relpath(path, cache))
    import struct
    with open(copy, "r+b") as f:
        head = f.read(64)
        shoff, = struct.unpack_from("<Q", head, 0x28)
        shnum, = struct.unpack_from("<H", head, 0x3c)
        for i in range(shnum):
            f.seek(shoff + i * 64)
            sh = f.read(64)
            if struct.unpack_from("<I", sh, 4)[0] == 2:        # SHT_SYMTAB
                size, = struct.unpack_from("<Q", sh, 32)
                f.seek(shoff + i * 64 + 32)
                f.write(struct.pack("<Q", size + 24))
    r = run(FGK, "relink", VMLINUX, "--seed", SEED, "--stats",
            env=dict(os.environ, FGK_CACHE_DIR=str(c)))
    assert r.returncode == 0, r.stderr
    assert "cached" not in r.stderr and "sections moved" in r.stderr, r.stderr
    with open(copy, "rb") as a, open(path, "rb") as b:
        assert a.read() == b.read()
