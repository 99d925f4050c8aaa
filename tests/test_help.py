"""The help text is written twice: the C strings `fgk CMD --help` prints and
the man pages docs/fgk-CMD.1.md.  They must agree: the man page's SYNOPSIS
is the usage `fgk CMD --help` prints (white space aside), and a usage line
that points to another help ("(see 'fgk seed capture --help')") stands for
that help's usage.  docs/fgk.1.md's SYNOPSIS names every command of `fgk
help` with its usage (an entry ending in " ..." abbreviates one).

Also the usage surface itself: a usage error of any command is one line
"fgk CMD: ..." and exit status 2, as is an unknown command; `fgk
--version` names the package, the layout spec and the libfgk ABI.
Unit tier: needs build/bin/fgk only."""
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FGK = REPO / "build" / "bin" / "fgk"
PAGES = sorted((REPO / "docs").glob("fgk-*.1.md"))


def raw_usage(*cmd) -> list:
    """The usage entries of `fgk CMD --help` as printed, see-also notes cut."""
    r = subprocess.run([FGK, *cmd, "--help"], capture_output=True, text=True)
    block = r.stdout.split("\n\n")[0][len("usage: "):]
    return [" ".join(re.sub(r"\(see '[^']+'\)\s*$", "", x).split())
            for x in re.split(r"\n(?=\s*fgk )", block)]


def commands() -> list:
    """The commands `fgk help` lists (but help itself)."""
    out = subprocess.run([FGK, "help"], capture_output=True, text=True).stdout
    return [c for c in re.findall(r"^  (\S+) ", out, re.M) if c != "help"]


def usage(*cmd) -> list:
    """The usage lines of `fgk CMD --help`, see-also lines expanded."""
    r = subprocess.run([FGK, *cmd, "--help"], capture_output=True, text=True)
    text = r.stdout or r.stderr
    assert text.startswith("usage: "), f"fgk {' '.join(cmd)} --help: {text[:200]!r}"
    block = text.split("\n\n")[0][len("usage: "):]
    lines = []
    for line in re.split(r"\n(?=\s*fgk )", block):        # one entry per command form
        m = re.search(r"\(see '(fgk [^']+) --help'\)\s*$", line)
        if m:
            lines += usage(*m.group(1).split()[1:])
        else:
            lines.append(" ".join(line.split()))
    return lines


def synopsis(page: Path) -> list:
    m = re.search(r"^## SYNOPSIS\n(.*?)^## ", page.read_text(), re.S | re.M)
    assert m, f"{page}: no SYNOPSIS section"
    return [" ".join(x.split()) for x in re.split(r"\n(?=\s*fgk )", m.group(1).strip())]


def test_every_command_has_a_page():
    assert {p.name for p in PAGES} >= {f"fgk-{c}.1.md" for c in
                                       ("addr", "audit", "crash", "layout", "map", "relink",
                                        "seed", "symbolize")}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_synopsis_is_the_usage(page):
    if not FGK.is_file():
        pytest.skip("build/bin/fgk missing: run 'make tools'")
    cmd = page.name[len("fgk-"):-len(".1.md")]
    assert synopsis(page) == usage(cmd), \
        f"{page.relative_to(REPO)} SYNOPSIS differs from 'fgk {cmd} --help'"


def need_fgk():
    if not FGK.is_file():
        pytest.skip("build/bin/fgk missing: run 'make tools'")


def test_fgk_page_synopsis_names_every_command():
    """fgk(1) SYNOPSIS: every command, each entry its usage (or a prefix of
    it ending in ' ...'), and the options shared by the commands."""
    need_fgk()
    page = REPO / "docs" / "fgk.1.md"
    entries = synopsis(page)
    cmds = commands()
    assert {"layout", "map", "addr", "seed", "relink", "symbolize", "crash",
            "audit"} <= set(cmds)
    for cmd in cmds:
        mine = [e for e in entries if e.split()[1] == cmd]
        assert mine, f"docs/fgk.1.md SYNOPSIS lacks 'fgk {cmd}'"
        forms = raw_usage(cmd)
        for e in mine:
            if e.endswith(" ..."):
                assert any(f.startswith(e[:-4]) for f in forms), \
                    f"docs/fgk.1.md: {e!r} abbreviates none of 'fgk {cmd} --help': {forms}"
            else:
                assert e in forms, f"docs/fgk.1.md: {e!r} is not in 'fgk {cmd} --help': {forms}"
    text = page.read_text()
    for opt in ("--seed SEED", "--seed-file RECORD", "--kallsyms FILE", "--build-id HEX",
                "--offset BASE", "--json", "--pretty", "--version"):
        assert opt in " ".join(entries), f"docs/fgk.1.md SYNOPSIS lacks {opt}"
        assert f"`{opt}" in text, f"docs/fgk.1.md does not describe {opt}"


def one_usage_line(r, cmd, *needles):
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1, f"want one line, got {r.stderr!r}"
    assert lines[0].startswith(f"fgk {cmd}: "), lines[0]
    for n in needles:
        assert n in lines[0], (n, lines[0])


# (arguments, the option named): every command's parser, every kind of error
BAD_OPTIONS = [
    (["--bogus"], "unrecognized option '--bogus'"),
    (["--bogus=1"], "unrecognized option '--bogus'"),
    (["-Z"], "unrecognized option '-Z'"),
    (["--help=1"], "option '--help' takes no argument"),
]
# an option with an argument, given none, per command (subcommand)
NEEDS_ARG = {
    "layout": ["--seed"], "map": ["--seed"], "addr": ["--seed"],
    "relink": ["--seed"], "symbolize": ["--seed"], "crash": ["--seed"],
    "audit": ["--gadgets"],
    "seed record": ["--vmlinux"], "seed show": ["--vmlinux"],
    "seed capture": ["--vmcore"],
}


@pytest.mark.parametrize("cmd", ["layout", "map", "addr", "relink", "symbolize", "crash",
                                 "audit",
                                 "seed parse", "seed record", "seed show", "seed capture"])
def test_usage_error_is_one_line(cmd):
    """An unknown option, an argument to an option without one, a missing
    argument: one line 'fgk CMD: ...', status 2 (getopt's own two-line
    'CMD: unrecognized option' reads as if crash(8) had said it)."""
    need_fgk()
    words = cmd.split()
    for args, needle in BAD_OPTIONS:
        r = subprocess.run([FGK, *words, *args], capture_output=True, text=True)
        one_usage_line(r, words[0], needle)
    if cmd in NEEDS_ARG:
        opt = NEEDS_ARG[cmd]
        r = subprocess.run([FGK, *words, *opt], capture_output=True, text=True)
        one_usage_line(r, words[0], f"option '{opt[0]}' needs an argument")


def test_usage_error_ambiguous_and_control_bytes():
    need_fgk()
    r = subprocess.run([FGK, "map", "--se", "x"], capture_output=True, text=True)
    one_usage_line(r, "map", "ambiguous option '--se'")
    # an option name with a terminal escape is shown, not sent
    r = subprocess.run([FGK, "addr", "--\x1b[2Jx"], capture_output=True, text=True)
    one_usage_line(r, "addr", "'--\\x1b[2Jx'")
    assert "\x1b" not in r.stderr


@pytest.mark.parametrize("args", [["nosuch"], ["help", "nosuch"], ["help", "map", "extra"]])
def test_unknown_command_is_a_usage_error(args):
    """`fgk nosuch` and `fgk help nosuch`: the same status, 2, one line."""
    need_fgk()
    r = subprocess.run([FGK, *args], capture_output=True, text=True)
    assert r.returncode == 2, (args, r.returncode, r.stderr)
    assert r.stdout == "" and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith("fgk: ") and "'fgk help'" in r.stderr


def test_version_names_package_spec_and_abi():
    """`fgk --version`: the package version, the layout spec version (the
    title of docs/layout-spec.md) and the libfgk ABI (the SONAME the
    Makefile links, as readelf sees it in the built library)."""
    need_fgk()
    r = subprocess.run([FGK, "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == ""
    out = r.stdout.strip()
    assert len(r.stdout.splitlines()) == 1, r.stdout
    spec = re.search(r"\(version (\d+)\)", (REPO / "docs" / "layout-spec.md")
                     .read_text().splitlines()[0]).group(1)
    soname = re.search(r"^SONAME\s*:=\s*libfgk\.so\.(\d+)$",
                       (REPO / "layout-tools" / "Makefile").read_text(), re.M).group(1)
    assert re.fullmatch(r"fgk \d+(\.\d+)+\S* \(.*\)", out), out
    assert f"layout spec version {spec}" in out, out
    assert f"libfgk ABI {soname}" in out and f"libfgk.so.{soname}" in out, out
    lib = REPO / "build" / "lib" / f"libfgk.so.{soname}"
    if lib.is_file():
        d = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True).stdout
        assert f"Library soname: [libfgk.so.{soname}]" in d, d
