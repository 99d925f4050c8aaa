"""The help text is written twice: the C strings `fgk CMD --help` prints and
the man pages docs/fgk-CMD.1.md.  They must agree: the man page's SYNOPSIS
is the usage `fgk CMD --help` prints (white space aside), and a usage line
that points to another help ("(see 'fgk seed capture --help')") stands for
that help's usage.  Unit tier: needs build/bin/fgk only."""
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FGK = REPO / "build" / "bin" / "fgk"
PAGES = sorted((REPO / "docs").glob("fgk-*.1.md"))


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
                                       ("addr", "crash", "layout", "map", "relink", "seed",
                                        "symbolize")}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_synopsis_is_the_usage(page):
    if not FGK.is_file():
        pytest.skip("build/bin/fgk missing: run 'make tools'")
    cmd = page.name[len("fgk-"):-len(".1.md")]
    assert synopsis(page) == usage(cmd), \
        f"{page.relative_to(REPO)} SYNOPSIS differs from 'fgk {cmd} --help'"
