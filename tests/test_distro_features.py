"""FG-KASLR with what distribution kernels have: ftrace, kprobes, livepatch,
BPF, jump labels, the speculation mitigations and UEFI boot.

Every test boots build/kernel/bzImage under QEMU with a fresh random seed
and base KASLR on (the seeds are printed), and checks the feature on
functions the shuffle moved (functions that have a `.text.<name>` section
in vmlinux).  Skips, saying why, when the kernel lacks the feature.
"""
import random
import re
import subprocess
from functools import lru_cache

import pytest

from conftest import KERNEL_DIR, KERNEL_NAME, REPO, boot, require_kernel
from test_oracle import FGK, VMLINUX, compare, guest_kallsyms, link_text

CONFIG = KERNEL_DIR / "config"


def config_has(*options):
    """Skip unless every option is y or m; "A|B": either name (6.9 renamed
    the mitigations' options: RETPOLINE became MITIGATION_RETPOLINE)."""
    require_kernel()
    text = CONFIG.read_text()
    missing = [o for o in options
               if not any(re.search(rf"^CONFIG_{a}=[ym]$", text, re.M) for a in o.split("|"))]
    if missing:
        reason = f"{KERNEL_NAME}/config lacks " + \
            ", ".join(" or ".join("CONFIG_" + a for a in m.split("|")) for m in missing)
        print(reason)
        pytest.skip(reason)


@lru_cache(maxsize=None)
def shuffled_functions():
    """Names of the functions in their own .text.<name> section of vmlinux."""
    out = subprocess.run(["readelf", "-SW", str(VMLINUX)], capture_output=True, text=True,
                         check=True).stdout
    return frozenset(re.findall(r"\] \.text\.([A-Za-z_][A-Za-z0-9_]*)\s+PROGBITS", out))


@lru_cache(maxsize=None)
def link_symbols():
    """{name: link address} of vmlinux's function symbols (unique names only)."""
    out = subprocess.run(["nm", str(VMLINUX)], capture_output=True, text=True,
                         check=True).stdout
    seen, syms = set(), {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "tT":
            if f[2] in seen:
                syms.pop(f[2], None)
            else:
                syms[f[2]] = int(f[0], 16)
            seen.add(f[2])
    return syms


def random_seed():
    seed = "%064x" % random.getrandbits(256)
    print(f"seed {seed}")
    return seed


def kallsyms_map(lines):
    syms = {}
    for line in lines:
        f = line.split()
        syms.setdefault(f[2], int(f[0], 16))
    return syms


def section(output, name):
    m = re.search(rf"^=== {name}\n(.*?)^=== end {name}$", output, re.S | re.M)
    assert m, f"no '{name}' section in the guest output"
    return m.group(1)


def check_moved(names, syms, offset):
    """The functions really moved: runtime != link + base offset."""
    link = link_symbols()
    for n in names:
        assert n in shuffled_functions(), f"{n} is not in a .text.* section"
        assert syms[n] != link[n] + offset, f"{n} did not move"


def boot_ok(script, seed, **kw):
    kw.setdefault("timeout", 240)
    res = boot(script, seed=seed, kaslr=True, **kw)
    assert res.rc == 0, (res.message, res.output[-3000:])
    return res


KALLSYMS = "echo kallsyms-begin; cat /proc/kallsyms; echo kallsyms-end\n"
TRACEFS = "mount -t tracefs nodev /sys/kernel/tracing; cd /sys/kernel/tracing\n"

# ------------------------------------------------------------------ ftrace

FTRACE_FUNCS = ["version_proc_show", "cmdline_proc_show", "meminfo_proc_show"]
GRAPH_FUNC = "__x64_sys_newuname"

FTRACE_SCRIPT = TRACEFS + r"""
echo "=== filter"
for f in %(funcs)s; do echo $f >> set_ftrace_filter; done
cat set_ftrace_filter
echo "=== end filter"
echo function > current_tracer
echo 1 > tracing_on
cat /proc/version /proc/cmdline /proc/meminfo > /dev/null
uname -a > /dev/null
echo 0 > tracing_on
echo "=== function"
cat trace
echo "=== end function"
echo nop > current_tracer
echo > set_ftrace_filter
echo %(graph)s > set_graph_function
echo 2 > max_graph_depth
echo function_graph > current_tracer
echo 0 > options/funcgraph-irqs
# funcgraph-irqs=0 drops what runs in hard IRQ context only: irq_enter_rcu()
# runs before the hardirq count is raised and softirqs run on irq exit, so
# an interrupt during the syscall would show them as its "callees"
echo irq_enter_rcu handle_softirqs > set_graph_notrace
echo > trace
echo 1 > tracing_on
uname -a > /dev/null
echo 0 > tracing_on
echo "=== graph"
cat trace
echo "=== end graph"
echo nop > current_tracer
echo "=== available"
cat available_filter_functions
echo "=== end available"
""" % {"funcs": " ".join(FTRACE_FUNCS), "graph": GRAPH_FUNC} + KALLSYMS


def direct_callees(func, depth=0):
    """Functions that `func` calls directly, from vmlinux's code; a tail call
    (jmp to another function) counts with that function's own callees, as
    the graph tracer shows them at the same depth."""
    addr = link_symbols()[func]
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(VMLINUX),
                          f"--start-address={addr:#x}", f"--stop-address={addr + 0x400:#x}"],
                         capture_output=True, text=True, check=True).stdout
    body = out.split(f"<{func}>:", 1)[1]
    body = re.split(r"\n\n[0-9a-f]+ <", body)[0]          # up to the next symbol
    found = re.findall(r"\s(call|jmp)\s+[0-9a-f]+ <([A-Za-z_][\w.]*?)(\+0x[0-9a-f]+)?>", body)
    skip = ("__fentry__", "__stack_chk_fail", func)
    callees = set()
    for op, name, off in found:
        if name in skip or name.startswith("__x86_") or off:
            continue
        callees.add(name)
        if op == "jmp" and depth < 2 and name in link_symbols():
            callees |= direct_callees(name, depth + 1)
    return callees


def test_ftrace(kernel):
    config_has("DYNAMIC_FTRACE", "FUNCTION_TRACER", "FUNCTION_GRAPH_TRACER")
    seed = random_seed()
    res = boot_ok(FTRACE_SCRIPT, seed)
    got = guest_kallsyms(res.output)
    syms = kallsyms_map(got)
    offset = syms["_text"] - link_text()
    print(f"base offset {offset:#x}")
    check_moved(FTRACE_FUNCS + [GRAPH_FUNC], syms, offset)

    # 1. the function tracer with a filter records exactly those functions
    assert sorted(section(res.output, "filter").split()) == sorted(FTRACE_FUNCS)
    traced = re.findall(r"^\s*\S+-\d+\s+\[\d+\].*?:\s+(\w+) <-(\w+)", section(res.output,
                        "function"), re.M)
    print(f"function tracer: {len(traced)} events: {sorted(set(f for f, _ in traced))}")
    assert {f for f, _ in traced} == set(FTRACE_FUNCS)

    # 2. function_graph over a syscall: its callees, as vmlinux's code says
    graph = section(res.output, "graph")
    assert re.search(rf"\b{GRAPH_FUNC}\(\) {{", graph), graph[-2000:]
    # the callees on the CPU that ran it (a bigger kernel interleaves other
    # CPUs' and interrupts' lines: "==========>" ... "<==========")
    cpu = re.search(rf"^\s*(\d+)\)[^\n]*\b{GRAPH_FUNC}\(\) {{", graph, re.M).group(1)
    mine, in_irq = [], False
    for line in graph.splitlines():
        m = re.match(r"^\s*(\d+)\)", line)
        if not m or m.group(1) != cpu:
            continue
        if "==========>" in line:
            in_irq = True
        elif "<==========" in line:
            in_irq = False
        elif not in_irq:
            mine.append(line)
    seen = set(re.findall(r"\|\s{4}(\w+)\(\);", "\n".join(mine)))
    want = direct_callees(GRAPH_FUNC)
    print(f"function_graph {GRAPH_FUNC}: callees {sorted(seen)}; direct calls in vmlinux "
          f"{sorted(want)}")
    assert seen and seen <= want, (seen, want)

    # 3. every traceable function resolves to a symbol in the booted kallsyms;
    # and it is the set of functions with an mcount site in vmlinux
    avail = [l.split()[0] for l in section(res.output, "available").splitlines() if l.strip()
             and "[" not in l]
    # records in overridden weak functions (not shuffle related), see ftrace.c
    invalid = [a for a in avail if a.startswith("__ftrace_invalid_address__")]
    avail = [a for a in avail if a not in invalid]
    print(f"available_filter_functions: {len(invalid)} __ftrace_invalid_address__ entries")
    names = {l.split()[2] for l in got if l.split()[1] in "tTwW"}
    missing = [a for a in avail if a not in names]
    print(f"available_filter_functions: {len(avail)} entries, {len(missing)} not in kallsyms")
    assert len(avail) > 5000 and not missing, missing[:10]
    assert set(FTRACE_FUNCS) <= set(avail)

    # 4. the mcount sites are sorted: ftrace's own check and the KUnit case
    if re.search(r"^CONFIG_FTRACE_SORT_STARTUP_TEST=y$", CONFIG.read_text(), re.M):
        assert re.search(r"ftrace section at [0-9a-f]+ sorted properly", res.log), \
            "no 'sorted properly' from FTRACE_SORT_STARTUP_TEST"
    else:   # Debian's config: the KUnit case below checks the same order
        print(f"{KERNEL_NAME}/config lacks CONFIG_FTRACE_SORT_STARTUP_TEST: "
              "ftrace's own sort check not run, the KUnit case is")
    assert "is not sorted with" not in res.log
    assert re.search(r"\bok \d+ fgkaslr_test_mcount_sorted\b", res.log), \
        "KUnit fgkaslr_test_mcount_sorted did not pass"
    m = re.search(r"sort\(\) of the (\d+) mcount sites at boot: (\d+) us", res.log)
    print(f"mcount: {m and m.group(0)}")
    assert not res.warnings, res.warnings


# ------------------------------------------------------------------ kprobes

KPROBE_FUNC = "version_proc_show"

KPROBE_SCRIPT = TRACEFS + r"""
mount -t debugfs nodev /sys/kernel/debug
echo "p:fgk/kp %(f)s" >> kprobe_events
echo "r:fgk/krp %(f)s ret=\$retval" >> kprobe_events
echo 1 > events/fgk/enable
echo 1 > tracing_on
cat /proc/version > /dev/null
echo 0 > tracing_on
echo "=== trace"
cat trace
echo "=== end trace"
echo "=== list"
cat /sys/kernel/debug/kprobes/list
echo "=== end list"
echo 0 > events/fgk/enable
echo > kprobe_events
echo "=== blacklist"
cat /sys/kernel/debug/kprobes/blacklist
echo "=== end blacklist"
""" % {"f": KPROBE_FUNC} + KALLSYMS + r"""
echo "=== refused"
for f in $(cat /fgk/try); do
  if echo "p:fgk/bl $f" >> kprobe_events 2>/dev/null; then echo "ACCEPTED $f"; echo > kprobe_events;
  else echo "REFUSED $f"; fi
done
echo "=== end refused"
"""


def test_kprobes(kernel, tmp_path):
    config_has("KPROBES", "KRETPROBES", "KPROBE_EVENTS")
    seed = random_seed()
    # blacklisted functions that the shuffle moves (from NOKPROBE_SYMBOL)
    nm = subprocess.run(["nm", str(VMLINUX)], capture_output=True, text=True,
                        check=True).stdout
    bl = sorted(n for n in re.findall(r" _kbl_addr_(\w+)$", nm, re.M)
                if n in shuffled_functions() and n in link_symbols())
    assert bl, "no NOKPROBE_SYMBOL function in a .text.* section"
    try_list = bl[:5]
    (tmp_path / "try").write_text("\n".join(try_list) + "\n")
    res = boot_ok(KPROBE_SCRIPT, seed, files={"/fgk/try": str(tmp_path / "try")})
    got = guest_kallsyms(res.output)
    syms = kallsyms_map(got)
    offset = syms["_text"] - link_text()
    check_moved([KPROBE_FUNC] + try_list, syms, offset)

    # Kernel version and config dependent, not the shuffle's: with IBT
    # (6.12's build) a probe on a function's entry sits after its ENDBR64
    # (arch_adjust_kprobe_addr: +0x4); with PROBE_EVENTS_BTF_ARGS (6.6+)
    # $retval has the function's BTF type, int, printed as 0, not 0x0
    config = CONFIG.read_text()
    entry = 4 if re.search(r"^CONFIG_X86_KERNEL_IBT=y$", config, re.M) else 0
    ret = "0" if re.search(r"^CONFIG_PROBE_EVENTS_BTF_ARGS=y$", config, re.M) else "0x0"
    trace = section(res.output, "trace")
    assert re.search(rf"\bkp: \({KPROBE_FUNC}\+{entry:#x}/0x[0-9a-f]+\)", trace), trace[-2000:]
    assert re.search(rf"\bkrp: \(\w+\+0x[0-9a-f]+/0x[0-9a-f]+ <- {KPROBE_FUNC}\) ret={ret}$",
                     trace, re.M), trace[-2000:]
    m = re.search(rf"^([0-9a-f]+)\s+[kr]\s+{KPROBE_FUNC}\+{entry:#x}\s",
                  section(res.output, "list"), re.M)
    assert m and int(m.group(1), 16) == syms[KPROBE_FUNC] + entry, section(res.output, "list")

    # the blacklist follows the shuffle: its ranges are the functions' runtime ones
    ranges = {l.split()[1]: l.split()[0] for l in section(res.output, "blacklist").splitlines()
              if "-" in l}
    for f in try_list:
        start = int(ranges[f].split("-")[0], 16)
        assert start == syms[f], (f, ranges[f], hex(syms[f]))
    refused = section(res.output, "refused")
    print(refused)
    for f in try_list:
        assert f"REFUSED {f}" in refused


# ------------------------------------------------------------------ livepatch

LIVEPATCH_SCRIPT = r"""
echo "before: $(cat /proc/cmdline)"
insmod /fgk/livepatch-sample.ko || exit 1
echo "patched: $(cat /proc/cmdline)"
lp=/sys/kernel/livepatch/livepatch_sample
i=0; while [ "$(cat $lp/transition)" != 0 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
echo 0 > $lp/enabled
i=0; while [ -d $lp ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
rmmod livepatch_sample || exit 2
echo "after: $(cat /proc/cmdline)"
echo "left: $(grep -c livepatch_sample /proc/modules)"
"""


def livepatch_module():
    kos = list((KERNEL_DIR / "modules").glob("lib/modules/*/kernel/samples/livepatch/"
                                              "livepatch-sample.ko"))
    if not kos:
        reason = f"no livepatch-sample.ko under {KERNEL_NAME}/modules (CONFIG_SAMPLE_LIVEPATCH)"
        print(reason)
        pytest.skip(reason)
    return kos[0]


def test_livepatch(kernel):
    config_has("LIVEPATCH")
    ko = livepatch_module()
    seed = random_seed()
    res = boot(LIVEPATCH_SCRIPT, seed=seed, kaslr=True, timeout=240,
               files={"/fgk/livepatch-sample.ko": str(ko)})
    print(res.output)
    assert "cmdline_proc_show" in shuffled_functions()
    before = re.search(r"^before: (.*)$", res.output, re.M).group(1)
    assert "fgkaslr_seed=" in before
    assert re.search(r"^patched: this has been live patched$", res.output, re.M)
    assert re.search(r"^after: (.*)$", res.output, re.M).group(1) == before
    assert re.search(r"livepatch: enabling patch 'livepatch_sample'", res.log)
    assert re.search(r"livepatch: 'livepatch_sample': unpatching complete", res.log)
    assert res.rc == 0, res.message
    assert re.search(r"^left: 0$", res.output, re.M)
    assert not res.warnings, res.warnings


# ------------------------------------------------------------------ BPF

BPF_FUNC = "version_proc_show"


def test_bpf_kprobe_program(kernel, tmp_path):
    config_has("BPF_SYSCALL", "BPF_JIT", "BPF_EVENTS", "KPROBES")
    exe = tmp_path / "bpf_kprobe_ip"
    subprocess.run(["gcc", "-static", "-O2", "-Wall", "-Werror", "-o", str(exe),
                    str(REPO / "tests" / "guest" / "bpf_kprobe_ip.c")], check=True)
    seed = random_seed()
    script = (f"cat /proc/sys/net/core/bpf_jit_enable 2>/dev/null\n"
              f"/fgk/bpf_kprobe_ip {BPF_FUNC} /proc/version || exit 1\n" + KALLSYMS)
    res = boot_ok(script, seed, files={"/fgk/bpf_kprobe_ip": str(exe)})
    got = guest_kallsyms(res.output)
    syms = kallsyms_map(got)
    check_moved([BPF_FUNC], syms, syms["_text"] - link_text())
    hits = int(re.search(r"^hits (\d+)$", res.output, re.M).group(1))
    ip = int(re.search(r"^ip (0x[0-9a-f]+)$", res.output, re.M).group(1), 16)
    print(f"BPF program: {hits} hits, bpf_get_func_ip {ip:#x}, kallsyms "
          f"{BPF_FUNC} {syms[BPF_FUNC]:#x}")
    assert hits >= 1
    assert ip == syms[BPF_FUNC]


# ------------------------------------------------------------------ jump labels

JUMP_SCRIPT = TRACEFS + r"""
e=events/sched/sched_process_exec
echo 1 > $e/enable
/bin/busybox true; /bin/busybox true
echo 0 > $e/enable
echo "on: $(grep -c 'sched_process_exec:' trace)"
/bin/busybox true; /bin/busybox true; /bin/busybox true
echo "off: $(grep -c 'sched_process_exec:' trace)"
echo 1 > $e/enable
/bin/busybox true
echo 0 > $e/enable
echo "again: $(grep -c 'sched_process_exec:' trace)"
"""


def test_jump_labels(kernel):
    config_has("JUMP_LABEL")
    seed = random_seed()
    res = boot_ok(JUMP_SCRIPT, seed)
    counts = {k: int(v) for k, v in re.findall(r"^(on|off|again): (\d+)$", res.output, re.M)}
    print(counts)
    # the tracepoint's static key turns the call in exec on and off
    assert counts["on"] >= 2 and counts["off"] == counts["on"]
    assert counts["again"] == counts["on"] + 1
    assert re.search(r"\bok \d+ fgkaslr_test_jump_label\b", res.log)
    assert re.search(r"\bok \d+ fgkaslr_test_static_call\b", res.log)
    assert not res.warnings, res.warnings


# ------------------------------------------------------------------ mitigations

MITIGATION_SCRIPT = r"""
cd /sys/devices/system/cpu/vulnerabilities
for f in *; do echo "$f: $(cat $f)"; done
"""


def test_mitigations(kernel):
    config_has("RETPOLINE|MITIGATION_RETPOLINE", "RETHUNK|MITIGATION_RETHUNK",
               "CPU_SRSO|MITIGATION_SRSO")
    seed = random_seed()
    res = boot_ok(MITIGATION_SCRIPT, seed)
    vuln = dict(re.findall(r"^(\w+): (.*)$", res.output, re.M))
    for k, v in sorted(vuln.items()):
        print(f"  {k}: {v}")
    assert vuln["spectre_v1"].startswith("Mitigation")
    assert vuln["spectre_v2"].startswith("Mitigation")
    for bad in ("missing return thunk", "alternative", "jump_label", "static_call",
                "text_poke", "int3"):
        hits = [l for l in res.warnings if bad in l.lower()]
        assert not hits, hits
    assert not res.warnings, res.warnings
    assert "FG-KASLR: shuffled" in res.log


# ------------------------------------------------------------------ UEFI

EFI_SCRIPT = r"""
echo "efi=$(test -d /sys/firmware/efi && echo yes || echo no)"
echo "seed=$(cat /proc/fgkaslr_seed)"
grep -o -m1 -w rdrand /proc/cpuinfo || echo "rdrand=none"
""" + KALLSYMS


@pytest.mark.parametrize("cpu", ["max", "qemu64"])
def test_efi_boot_is_shuffled_and_mapped(kernel, cpu):
    """--efi: OVMF loads the kernel through its EFI stub; the boot is shuffled
    from a seed the kernel chose itself (with RDRAND on "max", without it on
    "qemu64"), and fgk map with that seed equals the booted kallsyms."""
    config_has("EFI", "EFI_STUB")
    res = boot(EFI_SCRIPT, kaslr=True, efi=True, cpu=cpu, timeout=300)
    assert res.rc == 0, (res.message, res.output[-2000:])
    assert "efi=yes" in res.output
    assert ("rdrand=none" in res.output) == (cpu == "qemu64")
    seed = re.search(r"^seed=([0-9a-f]{64})$", res.output, re.M).group(1)
    print(f"EFI boot, cpu {cpu}: kernel-chosen seed {seed}")
    ent = re.search(r"FG-KASLR: shuffled \d+ function sections, seed random, "
                    r"(\d+) bits of entropy \(([a-z_,-]+)\)", res.log)
    assert ent, res.log[-3000:]
    print(f"seed entropy: {ent.group(1)} bits from {ent.group(2)}")
    if cpu == "max":    # RDRAND and RDSEED
        assert int(ent.group(1)) == 256
    got = guest_kallsyms(res.output)
    offset = kallsyms_map(got)["_text"] - link_text()
    print(f"base offset {offset:#x}")
    compare(seed, offset, got)


# ------------------------------------------------------------------ hibernation

HIB_NAMES = ["version_proc_show", "cmdline_proc_show", "meminfo_proc_show"]
HIB_GREP = "grep -E ' (%s)$' /proc/kallsyms" % "|".join(HIB_NAMES)

HIBERNATE_SCRIPT = r"""
mkswap /dev/vda > /dev/null && swapon /dev/vda || exit 3
echo "seed-before=$(cat /proc/fgkaslr_seed)"
%(grep)s | sed 's/^/before /'
echo HIBERNATING > /dev/console
echo disk > /sys/power/state || exit 4
{
  echo "resumed-seed=$(cat /proc/fgkaslr_seed)"
  %(grep)s | sed 's/^/after /'
  echo "version-after: $(cat /proc/version)"
} > /dev/console
""" % {"grep": HIB_GREP}

FRESH_SCRIPT = 'echo "fresh-boot seed=$(cat /proc/fgkaslr_seed)" > /dev/console\n'


def test_hibernation_resumes_in_a_boot_with_another_seed(kernel, tmp_path):
    """Hibernate a shuffled kernel to a virtio disk, then boot with another
    seed and resume=: the image kernel comes back with its own layout and
    runs (its shuffled functions are where its kallsyms says)."""
    config_has("HIBERNATION", "SWAP", "VIRTIO_BLK")
    disk = tmp_path / "swap.img"
    with open(disk, "wb") as f:
        f.truncate(256 << 20)
    drive = ["-drive", f"file={disk},if=virtio,format=raw"]
    seed_a, seed_b = random_seed(), random_seed()
    first = boot(HIBERNATE_SCRIPT, seed=seed_a, kaslr=True, timeout=300,
                 extra_qemu_args=drive, append="no_console_suspend")
    print(first.output)
    assert re.search(rf"^seed-before={seed_a}$", first.output, re.M), first.message
    assert "HIBERNATING" in first.log
    assert re.search(r"PM: hibernation: (?:hibernation exit|Image saved|.*wrote)|"
                     r"PM: Image saving done|reboot: Power down", first.log), first.log[-3000:]
    before = {l.split()[3]: l.split()[1] for l in first.output.splitlines()
              if l.startswith("before ")}
    assert set(before) == set(HIB_NAMES)

    second = boot(FRESH_SCRIPT, seed=seed_b, kaslr=True, timeout=300,
                  extra_qemu_args=drive, append="resume=/dev/vda no_console_suspend")
    log = second.log
    print(log[-3000:])
    assert "fresh-boot" not in log, "the second boot did not resume the image"
    assert re.search(rf"resumed-seed={seed_a}\b", log), "the image kernel's seed is not back"
    after = {}
    for line in log.splitlines():
        m = re.search(r"after ([0-9a-f]{16}) \S (\w+)$", line)
        if m:
            after[m.group(2)] = m.group(1)
    assert after == before, (after, before)
    assert re.search(r"version-after: Linux version", log)
    print(f"hibernated with seed {seed_a}, resumed from a boot with seed {seed_b}")
