"""fgk audit (docs/fgk-audit.1.md) against independent oracles: the region
bounds against nm's values of the kernel's own bounds symbols, the
functions and their bytes against readelf -sW's symbol table, the shuffled
sections and log2(n!) against readelf -SW, the gadget census against
ROPgadget run directly on one region, and hostile input.  Needs the
default kernel (build/kernel; KVERSION=6.12: build/kernel-6.12), and
ROPgadget (python3-ropgadget) for the census."""
import bisect
import json
import math
import re
import shutil

import pytest

from oracle import REPO, fgk, output, run

SEED = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
CENSUS = REPO / "scripts" / "gadget-census"
BOUNDS = ["__entry_text_start", "__entry_text_end", "__irqentry_text_start",
          "__irqentry_text_end", "__softirqentry_text_start", "__softirqentry_text_end",
          "__noinstr_text_start", "__noinstr_text_end", "__sched_text_start",
          "__sched_text_end", "__cpuidle_text_start", "__cpuidle_text_end",
          "__lock_text_start", "__lock_text_end", "__kprobes_text_start",
          "__kprobes_text_end", "__static_call_text_start", "__static_call_text_end",
          "__indirect_thunk_start", "__indirect_thunk_end", "_stext"]


SCHED_DOMAIN = "shuffled .sched.text.* (per object, inside its bounds)"
# spec §3 (version 3): the range domains, address order, .text.* after them:
# (prefix, first layout version, start symbol, limit symbol)
RANGE_DOMAINS = [
    (".sched.text.", 2, "__sched_text_start", "__sched_text_end"),
    (".spinlock.text.", 3, "__lock_text_start", "__lock_text_end"),
    (".static_call.text.", 3, "__static_call_text_start", "__static_call_text_end"),
    (".noinstr.text.", 3, "__noinstr_text_start", "__fgkaslr_noinstr_end"),
    (".cpuidle.text.", 3, "__cpuidle_text_start", "__cpuidle_text_end"),
]


def moving_name(prefix):
    return f"shuffled {prefix}* (per object, inside its bounds)"


MOVING = {"shuffled .text.*"} | {moving_name(d[0]) for d in RANGE_DOMAINS}


def domain_sections(sections, version):
    """Per range domain, then .text.*: the readelf -SW rows of its sections
    (allocated, executable PROGBITS, not empty; a range domain only from
    its layout version on)."""
    def rows(prefix):
        return [s for s in sections if s[0].startswith(prefix) and s[1] == "PROGBITS"
                and "A" in s[5] and "X" in s[5] and s[4]]
    return [rows(p) if version >= since else [] for p, since, _, _ in RANGE_DOMAINS] + \
        [rows(".text.")]


@pytest.fixture(scope="module")
def audit(vmlinux):
    return json.loads(fgk("audit", vmlinux, "--json", status=0).stdout)


@pytest.fixture(scope="module")
def nm(vmlinux):
    syms = {}
    for line in output("nm", vmlinux).splitlines():
        parts = line.split()
        if len(parts) == 3:
            syms.setdefault(parts[2], int(parts[0], 16))
    return syms


@pytest.fixture(scope="module")
def sections(vmlinux):
    """[(name, type, addr, off, size, flags)] from readelf -SW."""
    out = []
    for line in output("readelf", "-SW", vmlinux).splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+"
                     r"([0-9a-f]+)\s+[0-9a-f]+\s+(\S*)\s", line)
        if m:
            out.append((m.group(1), m.group(2), int(m.group(3), 16), int(m.group(4), 16),
                        int(m.group(5), 16), m.group(6)))
    return out


@pytest.fixture(scope="module")
def funcs(vmlinux):
    """{address: largest size} of the sized FUNC symbols, from readelf -sW."""
    f = {}
    for line in output("readelf", "-sW", vmlinux).splitlines():
        p = line.split()
        if len(p) >= 8 and p[3] == "FUNC" and p[6] != "UND":
            size = int(p[2], 0)
            if size:
                a = int(p[1], 16)
                f[a] = max(f.get(a, 0), size)
    return f


def function_spans(funcs):
    """The union of the function symbols' [value, value + size) (funcs:
    {address: largest size}) as (starts, ends) of disjoint sorted spans."""
    starts, ends = [], []
    for a in sorted(funcs):
        e = a + funcs[a]
        if starts and a <= ends[-1]:
            ends[-1] = max(ends[-1], e)
        else:
            starts.append(a)
            ends.append(e)
    return starts, ends


def in_function(spans, addr):
    starts, ends = spans
    i = bisect.bisect_right(starts, addr) - 1
    return i >= 0 and addr < ends[i]


def innermost(regions, addr):
    best = None
    for r in regions:
        if r["start"] <= addr < r["end"]:
            if best is None or r["end"] - r["start"] <= best["end"] - best["start"]:
                best = r
    return best


def regions_of(audit):
    rs = []
    for r in audit["regions"]:
        rs.append(dict(r, start=int(r["start"], 16), end=int(r["end"], 16)))
    return rs


@pytest.mark.k612
def test_regions_bounds_and_functions_match_the_symbol_table(audit, nm, funcs, sections):
    rs = regions_of(audit)
    named = {r["name"]: r for r in rs}
    # bounds: the kernel's own symbols, as nm reads them
    for r in rs:
        for key, sym in (("start", r["start_symbol"]), ("end", r["end_symbol"])):
            if sym:
                assert r[key] == nm[sym], (r["name"], sym)
    for s in BOUNDS[:-1:2]:
        e = s.replace("_start", "_end")
        if s in nm and e in nm:
            # a range domain's region ends at its limit symbol
            ends = {e} | {d[3] for d in RANGE_DOMAINS if d[2] == s}
            assert any(r["start_symbol"] == s and r["end_symbol"] in ends for r in rs), s
    # the shuffled region and the other executable sections: readelf -SW;
    # spec §3 version 2 adds the .sched.text.* domain
    doms = domain_sections(sections, nm.get("__fgkaslr_layout_version", 1))
    rand = doms[-1]
    assert audit["entropy"]["sections"] == sum(map(len, doms))
    assert len(rand) > 1000
    bits = sum(math.lgamma(len(d) + 1) / math.log(2) for d in doms)
    assert audit["entropy"]["log2_orderings"] == pytest.approx(bits, abs=0.06)
    assert [d["sections"] for d in audit["entropy"]["domains"]] == list(map(len, doms))
    present = {moving_name(d[0]) for d, rows in zip(RANGE_DOMAINS, doms) if rows}
    assert named["shuffled .text.*"]["start"] == min(s[2] for s in rand)
    assert named["shuffled .text.*"]["end"] == max(s[2] + s[4] for s in rand)
    assert named[".init.text"]["init"] and named[".init.text"]["start"] == nm["_sinittext"]
    assert named[".init.text"]["end"] == nm["_einittext"]
    # functions per region (innermost), and their bytes: readelf -sW
    want = {r["name"]: [0, 0] for r in rs}
    for a, size in funcs.items():
        r = innermost(rs, a)
        if r:
            want[r["name"]][0] += 1
            want[r["name"]][1] += size
    for r in rs:
        assert [r["functions"], r["function_bytes"]] == want[r["name"]], r["name"]
        assert r["moves"] == (r["name"] in MOVING), r["name"]
        assert r["name"] not in MOVING - {"shuffled .text.*"} or r["name"] in present
        assert (r["why"] is None) == r["moves"]
        if r["asm_functions"] is not None:
            assert r["asm_functions"] <= r["functions"]
    mv = sum(v[1] for k, v in want.items() if named[k]["class"] == "moving")
    fx = sum(v[1] for k, v in want.items() if named[k]["class"] == "fixed")
    assert audit["totals"]["resident_moving_percent"] == pytest.approx(100 * mv / (mv + fx),
                                                                       abs=0.006)
    # the entry text after the region (series patch 22, 6.12: 23): the
    # section holding it is a fixed region from __fgkaslr_text_end (the
    # region's end), the kernel's .entry.text bounds inside it
    outer = [named[".text"]]
    if "__fgkaslr_text_end" in nm:
        sec, ent = named[".entry.text section"], named[".entry.text"]
        es = next(x for x in sections if x[0] == ".entry.text")
        assert (sec["start"], sec["end"]) == (nm["__fgkaslr_text_end"], es[2] + es[4])
        assert sec["class"] == "fixed" and sec["start_symbol"] == "__fgkaslr_text_end"
        assert sec["start"] <= ent["start"] < ent["end"] <= sec["end"]
        assert named["shuffled .text.*"]["end"] <= sec["start"]
        outer.append(sec)
    else:
        assert ".entry.text section" not in named
    # region bytes add up to the extents (nested ones subtracted once)
    for text in outer:
        inside = [r for r in rs if r is not text and text["start"] <= r["start"] < text["end"]]
        assert text["bytes"] + sum(r["bytes"] for r in inside) == text["end"] - text["start"]


@pytest.mark.k612
def test_seed_moves_what_fgk_layout_moves(vmlinux):
    a = json.loads(fgk("audit", vmlinux, "--seed", SEED, "--json", status=0).stdout)
    lay = json.loads(fgk("layout", vmlinux, "--seed", SEED, "--json", status=0).stdout)
    moved = [s for s in lay["sections"] if s["new"] != s["link"]]
    assert a["seed"]["moved_sections"] == len(moved)
    assert a["seed"]["moved_bytes"] == sum(int(s["size"], 16) for s in moved)
    assert a["seed"]["layout_end"] == lay["end"]
    # fgk layout --json's domains[] carry audit's entropy.domains fields
    assert [{k: d[k] for k in ("prefix", "sections", "log2_orderings")}
            for d in lay["domains"]] == a["entropy"]["domains"]


@pytest.fixture(scope="module")
def census(vmlinux, tmp_path_factory):
    if not shutil.which("ROPgadget"):
        pytest.skip("ROPgadget missing: apt-get install python3-ropgadget (make deps)")
    out = tmp_path_factory.mktemp("census") / "gadgets.txt"
    r = run("nice", CENSUS, vmlinux, "-j", "2")
    assert r.returncode == 0, r.stderr
    out.write_text(r.stdout)
    return out


def test_gadget_census_matches_ropgadget_on_one_region(vmlinux, census, sections, funcs,
                                                       tmp_path):
    a = json.loads(fgk("audit", vmlinux, "--gadgets", census, "--json", status=0).stdout)
    rs = regions_of(a)
    g = a["gadgets"]
    assert g["outside_text"] == 0
    for c in ("moving", "fixed", "init"):
        assert g[c]["total"] == sum(r["gadgets"]["total"] for r in rs if r["class"] == c)
    # .sched.text straight from the file, ROPgadget run on it alone (with
    # 256 bytes after it, so that gadgets starting at its end are whole).
    # Read by address from the executable sections that cover it, zeros
    # between them as scripts/gadget-census does: in the main .text before
    # the .sched.text domain, its own .sched.text.<object> sections after.
    sched = next(r for r in rs if r["start_symbol"] == "__sched_text_start")
    lo, hi = sched["start"], sched["end"] + 256
    buf = bytearray(hi - lo)
    covered, spans = 0, []
    with open(vmlinux, "rb") as f:
        for name, typ, addr, off, size, flags in sections:
            if typ != "PROGBITS" or "A" not in flags or "X" not in flags:
                continue
            a, b = max(addr, lo), min(addr + size, hi)
            if a >= b:
                continue
            f.seek(off + a - addr)
            buf[a - lo:b - lo] = f.read(b - a)
            covered += b - a
            spans.append((addr, addr + size))
    assert covered > (sched["end"] - sched["start"]) // 2, "no section holds .sched.text"
    raw = tmp_path / "sched.bin"
    raw.write_bytes(bytes(buf))
    out = output("ROPgadget", "--binary", raw, "--rawArch", "x86", "--rawMode", "64",
                 "--offset", hex(sched["start"]), "--all")
    # the census counts the gadgets that start in a section, not in the
    # zeros between two (the .sched.text.<object> sections' alignment)
    direct = [ln for ln in out.splitlines() if ln.startswith("0x")
              and sched["start"] <= int(ln.split()[0], 16) < sched["end"]
              and any(a <= int(ln.split()[0], 16) < b for a, b in spans)]
    kinds = {"rop": 0, "jop": 0, "other": 0}
    for ln in direct:
        last = ln.split(" : ", 1)[1].split(" ; ")[-1]
        kinds["rop" if last.startswith("ret") else
              "jop" if last.startswith(("jmp", "call")) else "other"] += 1
    assert len(direct) > 100
    spans = function_spans(funcs)
    outside = sum(not in_function(spans, int(ln.split()[0], 16)) for ln in direct)
    assert sched["gadgets"] == dict(kinds, total=len(direct), outside_functions=outside)
    # the text report says the same
    txt = fgk("audit", vmlinux, "--gadgets", census, status=0).stdout
    assert f"fixed resident {g['fixed']['total']} ({g['unique']['fixed']} unique)" in txt


@pytest.mark.k612
def test_gadgets_outside_functions_match_the_symbol_table(vmlinux, census, funcs):
    """The gadgets that start outside every function symbol's [value,
    value + size) (readelf -sW's sized FUNC symbols), per region and per
    class, counted here from the census and the symbol table: code without
    function symbols (entry stubs) is why the fixed share of the gadgets
    exceeds the fixed share of the function bytes."""
    a = json.loads(fgk("audit", vmlinux, "--gadgets", census, "--json", status=0).stdout)
    rs = regions_of(a)
    spans = function_spans(funcs)
    want = {r["name"]: 0 for r in rs}
    for ln in census.read_text().splitlines():
        if ln.startswith("0x"):
            addr = int(ln.split(None, 1)[0], 16)
            if not in_function(spans, addr):
                r = innermost(rs, addr)
                if r:
                    want[r["name"]] += 1
    assert {r["name"]: r["gadgets"]["outside_functions"] for r in rs} == want
    g = a["gadgets"]
    for c in ("moving", "fixed", "init"):
        assert g[c]["outside_functions"] == sum(want[r["name"]] for r in rs
                                                if r["class"] == c), c
        assert g[c]["outside_functions"] <= g[c]["total"]
    mv, fx = g["moving"], g["fixed"]
    inside_fx = fx["total"] - fx["outside_functions"]
    inside = inside_fx + mv["total"] - mv["outside_functions"]
    t = a["totals"]
    fx_bytes = 100 * t["fixed"]["function_bytes"] / (t["fixed"]["function_bytes"]
                                                     + t["moving"]["function_bytes"])
    print(f"{vmlinux}: gadgets outside functions: moving {mv['outside_functions']} of "
          f"{mv['total']}, fixed {fx['outside_functions']} of {fx['total']}; fixed share "
          f"{100 * fx['total'] / (fx['total'] + mv['total']):.2f} % of all gadgets, "
          f"{100 * inside_fx / inside:.2f} % of those inside functions, "
          f"{fx_bytes:.2f} % of function bytes")
    assert fx["outside_functions"] > 0
    txt = fgk("audit", vmlinux, "--gadgets", census, status=0).stdout
    assert (f"moving {mv['outside_functions']} (" in txt and
            f"fixed resident {fx['outside_functions']} (" in txt and
            f"inside functions the fixed share is {inside_fx} of {inside} " in txt), txt


def test_no_fg_kernel_has_nothing_that_moves():
    nofg = REPO / "build" / "kernel-6.12-nofg" / "vmlinux"
    if not nofg.is_file():
        pytest.skip(f"{nofg} missing (make kernel KVERSION=6.12 KVARIANT=nofg)")
    a = json.loads(fgk("audit", nofg, "--json", status=0).stdout)
    assert a["entropy"]["sections"] == 0 and a["entropy"]["bits"] == 0
    assert all(not r["moves"] for r in a["regions"])
    assert a["totals"]["moving"]["functions"] == 0
    assert a["totals"]["fixed"]["functions"] > 10000


@pytest.mark.parametrize("content,needle", [
    ("0xzz : ret\n", "line 1: not a gadget line"),
    ("Gadgets information\n0xffffffff81000000 ret\n", "line 2: not a gadget line"),
    ("0x11111111111111111 : ret\n", "line 1: not a gadget line"),
    ("0xffffffff81000000 : \n", "line 1: gadget without instructions"),
    ("no gadgets here\n", "no gadget lines"),
    ("", "no gadget lines"),
])
def test_bad_gadget_file_is_one_line(vmlinux, tmp_path, content, needle):
    p = tmp_path / "g.txt"
    p.write_text(content)
    r = fgk("audit", vmlinux, "--gadgets", p, status=1)
    assert r.stdout == ""
    assert r.stderr.count("\n") == 1 and str(p) in r.stderr and needle in r.stderr, r.stderr


def test_bad_vmlinux_is_one_line(tmp_path):
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x7fELF" + b"\0" * 100)
    stripped = tmp_path / "stripped"
    shutil.copy("/bin/true", stripped)
    run("strip", stripped)
    for path, needle in ((junk, str(junk)), (stripped, str(stripped)),
                         (tmp_path / "none", "No such file"), (tmp_path, str(tmp_path))):
        r = fgk("audit", path, status=1)
        assert r.stdout == "" and r.stderr.count("\n") == 1 and needle in r.stderr, r.stderr
    r = fgk("audit", status=2)
    assert r.stderr.startswith("fgk audit: ") and r.stderr.count("\n") == 1
    r = fgk("audit", junk, "--seed", "xyz", status=1)
    assert r.stderr.count("\n") == 1


def independent_share(path, start="__sched_text_start", end="__sched_text_end"):
    """From the ELF symbol table alone (readelf -sW, nm): the sized
    function symbols inside [start, end) (aliases once, the largest size),
    and every resident sized function."""
    syms = {}
    for line in output("nm", path).splitlines():
        p = line.split()
        if len(p) == 3:
            syms.setdefault(p[2], int(p[0], 16))
    lo, hi = syms[start], syms[end]
    f = {}
    for line in output("readelf", "-sW", path).splitlines():
        p = line.split()
        if len(p) >= 8 and p[3] == "FUNC" and p[6] != "UND" and int(p[2], 0):
            a = int(p[1], 16)
            f[a] = max(f.get(a, 0), int(p[2], 0))
    inside = {a: n for a, n in f.items() if lo <= a < hi}
    return len(inside), sum(inside.values()), syms


def check_range_domains(path):
    """Every range domain with sections (spec §3): its region is the
    kernel's bounds [start symbol, limit symbol), moves, and holds the
    functions the symbol table puts there; the moving total is theirs plus
    the .text.* region's."""
    a = json.loads(fgk("audit", path, "--json", status=0).stdout)
    named = {r["name"]: r for r in a["regions"]}
    moving = named["shuffled .text.*"]["function_bytes"]
    found = 0
    for (prefix, _, start, end), dom in zip(RANGE_DOMAINS, a["entropy"]["domains"]):
        assert dom["prefix"] == prefix
        if not dom["sections"]:
            assert moving_name(prefix) not in named
            continue
        found += 1
        n, nbytes, syms = independent_share(path, start, end)
        r = named[moving_name(prefix)]
        print(f"{path}: {prefix}* domain: {dom['sections']} sections, {n} functions, "
              f"{nbytes} bytes by the symbol table; fgk audit {r['functions']}, "
              f"{r['function_bytes']}")
        assert (r["functions"], r["function_bytes"]) == (n, nbytes) and n > 0
        assert r["class"] == "moving" and r["moves"] and r["why"] is None
        assert (int(r["start"], 16), int(r["end"], 16)) == (syms[start], syms[end])
        assert (r["start_symbol"], r["end_symbol"]) == (start, end)
        moving += nbytes
    t = a["totals"]
    print(f"{path}: {found} range domains; moving {t['resident_moving_percent']} %")
    assert t["moving"]["function_bytes"] == moving
    resident = t["moving"]["function_bytes"] + t["fixed"]["function_bytes"]
    assert t["resident_moving_percent"] == pytest.approx(
        100 * t["moving"]["function_bytes"] / resident, abs=0.006)
    return a, found


def check_sched_domain(path):
    a, found = check_range_domains(path)
    named = {r["name"]: r for r in a["regions"]}
    assert SCHED_DOMAIN in named and ".sched.text" not in named
    return a


def test_sched_domain_fixture(elf_fixtures):
    """sched.elf (layout version 2): the .sched.text bounds move; sched-v1.elf
    (the same sections, no version symbol) keeps them fixed."""
    a = check_sched_domain(elf_fixtures / "sched.elf")
    assert a["totals"]["moving"]["functions"] >= 4
    assert [d["sections"] for d in a["entropy"]["domains"]][0] == 3
    v1 = json.loads(fgk("audit", elf_fixtures / "sched-v1.elf", "--json", status=0).stdout)
    named = {r["name"]: r for r in v1["regions"]}
    assert SCHED_DOMAIN not in named and named[".sched.text"]["class"] == "fixed"
    assert v1["entropy"]["domains"][0]["sections"] == 0


def test_range_domains_fixture(elf_fixtures):
    """domains.elf (layout version 3): each range domain's bounds move, its
    functions counted from the symbol table; the .noinstr.text bounds end
    at __fgkaslr_noinstr_end, where the .cpuidle.text ones begin; sched-v3.elf
    (version 3, no sections in the new domains) audits as sched.elf."""
    a, found = check_range_domains(elf_fixtures / "domains.elf")
    assert found == 5
    assert [d["sections"] for d in a["entropy"]["domains"]][:5] == [3, 3, 2, 4, 2]
    named = {r["name"]: r for r in a["regions"]}
    for old in (".sched.text", ".lock.text", ".static_call.text", ".noinstr.text",
                ".cpuidle.text"):
        assert old not in named, old
    v3, found = check_range_domains(elf_fixtures / "sched-v3.elf")
    v2 = json.loads(fgk("audit", elf_fixtures / "sched.elf", "--json", status=0).stdout)
    assert found == 1 and v3["entropy"] == v2["entropy"]
    assert v3["totals"] == v2["totals"]


@pytest.mark.k612
def test_sched_domain_moving_share(vmlinux, sections):
    """Issue 32: with the .sched.text.* domain, the audit's moving share is
    what the symbol table says (computed here, not taken from fgk)."""
    if not any(s[0].startswith(".sched.text.") for s in sections):
        reason = f"{vmlinux} has no .sched.text.* sections (no second shuffle domain)"
        print(reason)
        pytest.skip(reason)
    check_sched_domain(vmlinux)
