"""vmlinux.fgk against a running shuffled kernel (QEMU gdbstub, stock gdb).

* The shuffled code of vmlinux.fgk equals the guest's memory byte for byte,
  except at the sites the kernel patches at run time, which the test names
  from the file's own tables: alternatives, paravirt sites, jump labels,
  inline static calls and static call trampolines, lock prefixes, the
  return/retpoline/endbr/call-thunk site lists when configured, and
  6.11+'s runtime constants.
* Stock gdb with `symbol-file -o 0 vmlinux.fgk` on a guest booted with
  `nokaslr fgkaslr_seed=S`: `info line`, `list`, a breakpoint by function
  and by file:line on a shuffled function, and `bt` are all right.
"""
import re
import struct
import subprocess

import pytest
from elftools.elf.elffile import ELFFile

from conftest import REPO, guest
from test_oracle import FGK, VMLINUX, require_fgkaslr_vmlinux

SEED = "0123456789abcdef" * 4


def elf_sections(path):
    """(file bytes, {name: addr, off, size, type}) of the section headers,
    read with pyelftools (python3-pyelftools); type 1 is SHT_PROGBITS."""
    data = path.read_bytes()
    with open(path, "rb") as f:
        secs = {s.name: {"addr": s["sh_addr"], "off": s["sh_offset"], "size": s["sh_size"],
                         "type": 1 if s["sh_type"] == "SHT_PROGBITS" else s["sh_type"]}
                for s in ELFFile(f).iter_sections()}
    return data, secs


TABLES = [  # (start symbol, end symbol, entry size, patched bytes at the site)
    ("__start___jump_table", "__stop___jump_table", 16, 5),
    ("__start_static_call_sites", "__stop_static_call_sites", 8, 5),
    ("__smp_locks", "__smp_locks_end", 4, 1),
    # entry size and length member from the vmlinux's DWARF (entry_layout):
    # struct alt_instr is 12 bytes on 6.1, 14 on 6.12 (a 32-bit ft_flags);
    # 6.8 removed the paravirt patch sites
    ("__alt_instructions", "__alt_instructions_end", "alt_instr", "instrlen"),
    ("__parainstructions", "__parainstructions_end", "paravirt_patch_site", "len"),
    ("__retpoline_sites", "__retpoline_sites_end", 4, 6),
    ("__return_sites", "__return_sites_end", 4, 6),
    # call depth tracking (6.2+, retbleed=stuff): a call rewritten to its thunk
    ("__call_sites", "__call_sites_end", 4, 5),
    ("__ibt_endbr_seal", "__ibt_endbr_seal_end", 4, 4),
    # ftrace turns each "call __fentry__" into a 5-byte nop (absolute entries;
    # relink keeps this build-time-sorted table right, see test_relink.py)
    ("__start_mcount_loc", "__stop_mcount_loc", 8, 5),
]


def entry_layout(path, struct_name, member):
    """(sizeof(struct struct_name), offsetof(member)) from path's DWARF (gdb)."""
    r = subprocess.run(["gdb", "-batch", "-nx", "-ex", f"p sizeof(struct {struct_name})",
                        "-ex", f"p (int)&((struct {struct_name} *)0)->{member}", str(path)],
                       capture_output=True, text=True, timeout=300)
    vals = [int(v) for v in re.findall(r"^\$\d+ = (\d+)$", r.stdout, re.M)]
    assert len(vals) == 2, (struct_name, member, r.stdout, r.stderr)
    return vals[0], vals[1]


def patch_sites(path, data, secs):
    """(address, length) of every code site the kernel rewrites at run time.

    The tables live inside .data/.rodata, between linker-defined symbols.
    """
    nm = subprocess.run(["nm", str(path)], capture_output=True, text=True,
                        check=True).stdout
    sym = {f[2]: int(f[0], 16) for f in (l.split() for l in nm.splitlines())
           if len(f) == 3}

    def file_off(addr):
        for sec in secs.values():
            if sec["type"] == 1 and sec["addr"] <= addr < sec["addr"] + sec["size"]:
                return sec["off"] + addr - sec["addr"]
        return None

    # 6.11+ runtime constants (asm/runtime-const.h): `.long 1b - SIZE - .`,
    # the site is the instruction's immediate (an 8-byte pointer: USER_PTR_MAX,
    # dentry_hashtable; a 1-byte shift count: d_hash_shift)
    runtime = [(n, "__stop_" + n[len("__start_"):], 4, 8 if "_ptr_" in n else 1)
               for n in sym if n.startswith(("__start_runtime_ptr_", "__start_runtime_shift_"))]
    # static call trampolines (`__SCT__<name>`, 8 bytes: a 5-byte jmp or
    # ret, then the ud1 signature): static_call_update() rewrites the jmp
    # or ret (x86_idle, the apic_call_* calls, the tracepoints' ...). With
    # MITIGATION_RETHUNK a NULL trampoline's `jmp __x86_return_thunk` is a
    # return site too; without it (clang 14: make kernel KVARIANT=clang)
    # it is `ret; int3; nop; nop; nop` and in no table.
    sites = [(a, 5) for n, a in sym.items() if n.startswith("__SCT__")]
    for begin, end, entsize, length in TABLES + runtime:
        if begin not in sym or end not in sym or sym[end] <= sym[begin]:
            continue
        len_at = None
        if isinstance(entsize, str):
            entsize, len_at = entry_layout(path, entsize, length)
        assert (sym[end] - sym[begin]) % entsize == 0, (begin, entsize)
        base = file_off(sym[begin])
        for k in range((sym[end] - sym[begin]) // entsize):
            addr = sym[begin] + k * entsize
            raw = data[base + k * entsize: base + (k + 1) * entsize]
            if begin in ("__parainstructions", "__start_mcount_loc"):   # absolute
                site = struct.unpack_from("<Q", raw)[0]
            else:
                site = addr + struct.unpack_from("<i", raw)[0]
            sites.append((site, raw[len_at] if len_at is not None else length))
    return sites


def gdb(*commands, timeout=900):
    # upper bound only: dumping the 4 MB shuffled region through the gdbstub
    # takes seconds on an idle machine, minutes on a loaded one
    args = ["gdb", "-batch", "-nx", "-ex", "set confirm off",
            "-ex", "set pagination off"]
    for c in commands:
        args += ["-ex", c]
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def relinked(tmp_path_factory):
    require_fgkaslr_vmlinux()
    out = tmp_path_factory.mktemp("relink") / "vmlinux.fgk"
    r = subprocess.run([str(FGK), "relink", str(VMLINUX), "--seed", SEED,
                        "--no-cache", "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


def region(relinked):
    lay = subprocess.run([str(FGK), "layout", str(VMLINUX), "--seed", SEED, "--json"],
                         capture_output=True, text=True, check=True).stdout
    import json
    j = json.loads(lay)
    return int(j["start"], 16), int(j["limit"], 16)


def sched_regions():
    """Spec §3 versions 2 and 3: each non-empty range domain's [start,
    limit) (its lowest section, its limit symbol), from fgk layout --json."""
    import json
    j = json.loads(subprocess.run([str(FGK), "layout", str(VMLINUX), "--seed", SEED,
                                   "--json"], capture_output=True, text=True,
                                  check=True).stdout)
    return [(int(d["start"], 16), int(d["limit"], 16)) for d in j["domains"][:-1]
            if d["sections"]]


GUEST = r"""
echo FGK-RELINK-READY > /dev/console
while :; do read -r l < /proc/version; sleep 0.2; done
"""


# k612: the same on 6.12 (IBT, CALL_PADDING; 14-byte alt_instr, no paravirt
# sites, runtime constants): 5.1 MB of text, 119 s there (96 s on 6.1).
@pytest.mark.k612
def test_text_equals_guest_and_gdb_works(relinked, tmp_path):
    start, limit = region(relinked)
    dump = tmp_path / "text.bin"
    scheds = sched_regions()
    extra = [f"dump binary memory {tmp_path / f'range{k}.bin'} {a:#x} {b:#x}"
             for k, (a, b) in enumerate(scheds)]
    # .orc_unwind_ip: the kernel re-sorts it at boot; its entries' targets
    # (PC32) must be the relinked file's, section terminators included
    _, vsecs = elf_sections(VMLINUX)
    orc = vsecs.get(".orc_unwind_ip")
    if orc:
        extra.append(f"dump binary memory {tmp_path / 'orc_ip.bin'} {orc['addr']:#x} "
                     f"{orc['addr'] + orc['size']:#x}")
    with guest(GUEST, profile="debug", seed=SEED, gdb=0, timeout=1800) as g:
        assert g.wait_for_console("FGK-RELINK-READY", timeout=600), "guest did not come up"
        r = gdb(f"target remote 127.0.0.1:{g.gdb_port}",
                *extra,
                f"dump binary memory {dump} {start:#x} {limit:#x}",
                f"symbol-file -o 0 {relinked}",
                "info line version_proc_show",
                "list version_proc_show",
                "break version_proc_show",
                "break fs/proc/version.c:12",
                "continue",
                "p/x $pc",
                "info symbol $pc",
                "bt",
                "delete",
                "detach")
        g.kill()
    print(r.stdout[-4000:])
    assert r.returncode == 0, r.stderr

    # 1. the code: the .text.* region, and each range domain's (spec §3
    # versions 2 and 3) if the kernel has them
    data, secs = elf_sections(relinked)
    sites = patch_sites(relinked, data, secs)
    for start, limit, dump in [(start, limit, dump)] + \
            [(a, b, tmp_path / f"range{k}.bin") for k, (a, b) in enumerate(scheds)]:
        # file offset of [start, limit): through the section holding `start`
        first = min((s for s in secs.values() if s["addr"] and s["addr"] <= start
                     and start < s["addr"] + s["size"] and s["type"] == 1),
                    key=lambda s: s["size"])
        base_off = first["off"] - (first["addr"] - start)
        want = data[base_off: base_off + (limit - start)]
        got = dump.read_bytes()
        assert len(got) == len(want)
        allowed = bytearray(len(want))
        for a, n in sites:
            for k in range(max(n, 1)):
                if start <= a + k < limit:
                    allowed[a + k - start] = 1
        diff = [i for i in range(len(want)) if want[i] != got[i]]
        unexplained = [i for i in diff if not allowed[i]]
        print(f"region {start:#x}-{limit:#x}: {len(want)} bytes, {len(diff)} differ, "
              f"all at run-time patch sites" if not unexplained else
              f"{len(unexplained)} unexplained")
        assert not unexplained, [hex(start + i) for i in unexplained[:10]]
        # ftrace nops, return thunks and retpolines rewrite ~4 % of a
        # distribution config's text at boot; a wrong layout differs almost
        # everywhere.  A small range domain is denser in patch sites than
        # the whole text (6.12's 2.5 KiB of lock code: 11 %; its static call
        # trampolines, jmp rel32 + ud1 + int3, are 5 patched bytes of every
        # 8, and on Debian's configuration the boot rewrites nearly all of
        # them): there the comparison above has teeth as long as a good
        # part of the range lies outside patch sites
        covered = sum(allowed)
        print(f"  {covered} bytes ({100 * covered // len(want)} %) at patch sites")
        if len(want) >= 1 << 16:
            assert len(diff) < len(want) // 10
        else:
            assert covered <= len(want) * 4 // 5, (covered, len(want))

    # 1b. the ORC table: the multiset of targets the guest's (sorted) table
    # holds equals the relinked file's (unsorted: relink patches entries in
    # place). A section terminator points one past the section it ends and
    # moves with that section (kernel series patch 2); mapping its address
    # as an address would move it with the next section, or not at all.
    if orc:
        def targets(raw, base):
            n = len(raw) // 4
            return sorted(base + 4 * i + v for i, v in
                          enumerate(struct.unpack_from(f"<{n}i", raw)))
        rsec = secs[".orc_unwind_ip"]
        assert (rsec["addr"], rsec["size"]) == (orc["addr"], orc["size"])
        want_ip = targets(data[rsec["off"]: rsec["off"] + rsec["size"]], orc["addr"])
        got_ip = targets((tmp_path / "orc_ip.bin").read_bytes(), orc["addr"])
        assert len(got_ip) == len(want_ip)
        if got_ip != want_ip:
            import collections
            w, g_ = collections.Counter(want_ip), collections.Counter(got_ip)
            only_file, only_guest = sorted((w - g_).elements()), sorted((g_ - w).elements())
            pytest.fail(f".orc_unwind_ip: {len(only_file)} targets only in vmlinux.fgk "
                        f"(first {[hex(a) for a in only_file[:5]]}), {len(only_guest)} "
                        f"only in the guest (first {[hex(a) for a in only_guest[:5]]})")
        print(f".orc_unwind_ip: {len(got_ip)} entries, the same targets as vmlinux.fgk")

    # 2. gdb: symbols, lines, breakpoints, backtrace
    out = r.stdout
    # info line / list: the same file:line addr2line gives on the original
    # vmlinux at the function's link address (here an inlined get_current())
    link = int(re.search(r"^([0-9a-f]+) t version_proc_show$", subprocess.run(
        ["nm", str(VMLINUX)], capture_output=True, text=True).stdout, re.M).group(1), 16)
    a2l = subprocess.run(["addr2line", "-e", str(VMLINUX), hex(link)],
                         capture_output=True, text=True).stdout.strip()
    a2l_file, a2l_line = a2l.rsplit(":", 1)
    m = re.search(r'Line (\d+) of "(\S+)" starts at address (0x[0-9a-f]+) <version_proc_show>', out)
    assert m, "info line version_proc_show"
    assert a2l_file.endswith(m.group(2).lstrip("./")) and m.group(1) == a2l_line.split()[0]
    assert re.search(r"^%s\s" % m.group(1), out, re.M), "list shows that line"
    assert re.search(r"Breakpoint 2 at 0x[0-9a-f]+: file fs/proc/version\.c, line 1[2-6]\.", out)
    m = re.search(r"Breakpoint \d+, (?:0x[0-9a-f]+ in )?version_proc_show \(", out)
    assert m, "did not stop in version_proc_show"
    pc = int(re.search(r"^\$1 = (0x[0-9a-f]+)", out, re.M).group(1), 16)
    assert re.search(r"version_proc_show(\s+\+\s+\d+)? in section \.text\.", out)
    nm = subprocess.run(["nm", str(relinked)], capture_output=True, text=True).stdout
    func = int(re.search(r"^([0-9a-f]+) t version_proc_show$", nm, re.M).group(1), 16)
    assert func <= pc < func + 0x100
    frames = re.findall(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\w+) ", out, re.M)
    assert frames[0] == "version_proc_show"
    for caller in ("seq_read_iter", "vfs_read", "ksys_read"):
        assert caller in frames, frames
