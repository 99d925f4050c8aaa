"""The tests' shared process helpers and independent oracles.

Every test file that runs a command or the fgk binary, or checks libfgk
against binutils, takes these from here (``from oracle import run, fgk``)
instead of defining its own:

  run(*cmd, **kw)      subprocess.run of the words (str()'d), output captured
                       as text, timeout 3600 s; keyword arguments go to
                       subprocess.run.
  output(*cmd, **kw)   run(..., check=True).stdout.
  fgk(*args, input=None, env=None, timeout=600, cwd=None, status=None,
      text=True)       build/bin/fgk (or $FGK_BIN) with args; fails the test
                       when it died of a signal, or when `status` is given
                       and its exit status differs.  text=False: stdout and
                       stderr stay bytes, .out/.err hold them decoded.
                       Test files bind their options with functools.partial.
  readelf_sections(path)   {name: (index, addr, size)} from readelf -SW.
  readelf_build_id(path)   the GNU build-id from readelf -n.
  pyelf_sections(path)     {name: (type, offset, size)} from pyelftools.
  pyelf_machine(path)      e_machine from pyelftools.
  pyelf_core_notes(path)   [(name, type, desc)] of an ELF core's PT_NOTE
                           segments, from pyelftools.
  region_end(symbols)      (name, address) of spec section 3's limit from
                           {name: address} (nm, System.map):
                           __fgkaslr_text_end if there, else _etext.

The oracles are binutils and pyelftools, never libfgk: they check it.
"""

import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FGK = Path(os.environ.get("FGK_BIN", REPO / "build" / "bin" / "fgk"))


def run(*cmd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 3600)      # a hung tool fails its test, not CI's clock
    return subprocess.run([str(c) for c in cmd], **kw)


def output(*cmd, **kw):
    return run(*cmd, check=True, **kw).stdout


def fgk(*args, input=None, env=None, timeout=600, cwd=None, status=None, text=True):
    r = subprocess.run([str(FGK), *map(str, args)], capture_output=True, text=text,
                       input=input, env=env, timeout=timeout, cwd=cwd)
    assert r.returncode >= 0, f"fgk {args} died of signal {-r.returncode}: {r.stderr!r}"
    if not text:                        # bytes kept; .out/.err decoded for messages
        r.out = r.stdout.decode(errors="replace")
        r.err = r.stderr.decode(errors="replace")
    if status is not None:
        assert r.returncode == status, f"fgk {args}: exit {r.returncode}: {r.stderr}"
    return r


def readelf_sections(path):
    """{name: (index, addr, size)} of the sections readelf -SW lists
    (the first of a name)."""
    ref = {}
    for line in output("readelf", "-SW", path).splitlines():
        m = re.match(r"\s*\[\s*(\d+)\]\s+(\S+)\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+"
                     r"([0-9a-f]+)", line)
        if m and m.group(2) != "NULL":
            ref.setdefault(m.group(2), (int(m.group(1)), int(m.group(4), 16),
                                        int(m.group(6), 16)))
    return ref


def region_end(symbols):
    """The end of the randomized region (docs/layout-spec.md section 3):
    __fgkaslr_text_end, where the fixed entry text after the region starts
    (kernel series patch 22 on 6.1, 23 on 6.12), else _etext (the builds
    before); symbols = {name: address} read by nm or from System.map."""
    for name in ("__fgkaslr_text_end", "_etext"):
        if name in symbols:
            return name, symbols[name]
    raise KeyError("neither __fgkaslr_text_end nor _etext")


def readelf_build_id(path):
    """The GNU build-id readelf -n shows for path."""
    return re.search(r"Build ID: ([0-9a-f]+)", output("readelf", "-n", path)).group(1)


def pyelf_sections(path) -> dict:
    """{name: (type, offset, size)} of an ELF file's section headers."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.enums import ENUM_SH_TYPE_BASE
    with open(path, "rb") as f:
        out = {}
        for sec in ELFFile(f).iter_sections():
            t = sec["sh_type"]
            out[sec.name] = (ENUM_SH_TYPE_BASE.get(t, t) if isinstance(t, str) else t,
                             sec["sh_offset"], sec["sh_size"])
        return out


def pyelf_machine(path) -> int:
    from elftools.elf.elffile import ELFFile
    from elftools.elf.enums import ENUM_E_MACHINE
    with open(path, "rb") as f:
        m = ELFFile(f)["e_machine"]
    return ENUM_E_MACHINE.get(m, m) if isinstance(m, str) else m


def pyelf_core_notes(path) -> list:
    """[(name, type, desc bytes)] from the PT_NOTE segments of an ELF core
    (e.g. a QEMU dump-guest-memory file)."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.enums import ENUM_CORE_NOTE_N_TYPE, ENUM_NOTE_N_TYPE
    notes = []
    with open(path, "rb") as f:
        for seg in ELFFile(f).iter_segments("PT_NOTE"):
            for n in seg.iter_notes():
                t = n["n_type"]
                if isinstance(t, str):
                    t = ENUM_CORE_NOTE_N_TYPE.get(t, ENUM_NOTE_N_TYPE.get(t, t))
                notes.append((n["n_name"], t, bytes(n["n_descdata"])))
    return notes
