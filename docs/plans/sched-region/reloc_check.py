#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""
For every relocation of an allocated section in a vmlinux linked with
--emit-relocs, compare how the FG-KASLR boot code moves the field with how
the host tools (libfgk relink, and the relocs tool for PC32 targets) move it.

 host (libfgk relink.c fix_symtab): a symbol moves with the section of its
   st_shndx if it is shuffled and st_value lies in [start, end) of it.
 boot, absolute R_X86_64_64/32/32S: moves with the shuffled section that
   contains the *stored value* (fgk_relocs(): fgk_delta(v)).
 boot, PC32/PLT32: the relocs tool's table names the symbol's section
   (add_fg_pcrel: the same range rule as the host), except the walked
   tables (.return_sites, .retpoline_sites, .call_sites: by the value
   e + *e) and the sorted tables (__ex_table, .orc_unwind_ip: contents).

Streams the ELF with mmap; symbols are held (value, section) only.
usage: reloc_check.py VMLINUX [max examples per group]
(FGK_HOST_ORC=old: model the relink before it moved ORC terminators with
the section they end; the orc_entry format is read from .orc_header)
"""
import bisect
import collections
import mmap
import struct
import sys

path = sys.argv[1]
NEX = int(sys.argv[2]) if len(sys.argv) > 2 else 6
f = open(path, 'rb')
m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)

(e_shoff,) = struct.unpack_from('<Q', m, 0x28)
e_shentsize, e_shnum, e_shstrndx = struct.unpack_from('<HHH', m, 0x3a)
shdrs = []
for i in range(e_shnum):
    shdrs.append(struct.unpack_from('<IIQQQQIIQQ', m, e_shoff + i * 64))
if e_shnum == 0:
    e_shnum = shdrs[0][5] if shdrs else 0
if e_shstrndx == 0xffff:
    e_shstrndx = shdrs[0][7]
# name, type, flags, addr, offset, size, link, info, align, entsize
stroff = shdrs[e_shstrndx][4]


def cstr(off):
    end = m.find(b'\0', off)
    return m[off:end].decode('latin1')


names = [cstr(stroff + s[0]) for s in shdrs]
SHT_PROGBITS, SHT_SYMTAB, SHT_RELA, SHT_NOBITS, SHT_SYMTAB_SHNDX = 1, 2, 4, 8, 18
SHF_ALLOC, SHF_EXEC = 2, 4


# the shuffled sections: .text.* and the range domains' <name>.<object>
# (6.12 series patch 31: sched, lock, static call, noinstr, cpuidle)
FG_PREFIXES = ('.text.', '.sched.text.', '.spinlock.text.', '.static_call.text.',
               '.noinstr.text.', '.cpuidle.text.')


def is_fg(i):
    s = shdrs[i]
    n = names[i]
    return (s[1] == SHT_PROGBITS and (s[2] & (SHF_ALLOC | SHF_EXEC)) == (SHF_ALLOC | SHF_EXEC)
            and n.startswith(FG_PREFIXES) and s[5] > 0)


# FGK_VIRT=name:start:size,...: pretend these ranges (of a fixed section)
# were shuffled sections of their own (to test the check on the objects
# the patch keeps fixed)
virt = []
import os
for v in filter(None, os.environ.get('FGK_VIRT', '').split(',')):
    vn, va, vs = v.split(':')
    va, vs = int(va, 16), int(vs, 16)
    virt.append(len(shdrs))
    shdrs.append((0, SHT_PROGBITS, SHF_ALLOC | SHF_EXEC, va, 0, vs, 0, 0, 16, 0))
    names.append('.text.' + vn + ' (virtual)')
fg = sorted((shdrs[i][3], i) for i in range(len(shdrs)) if is_fg(i) or i in virt)
fg_start = [a for a, _ in fg]
fg_idx = [i for _, i in fg]
fg_end = [shdrs[i][3] + shdrs[i][5] for i in fg_idx]
isfg = [False] * len(shdrs)
for i in fg_idx:
    isfg[i] = True
region_lo, region_hi = fg_start[0], fg_end[-1]
M64 = (1 << 64) - 1


def sec_at(v):
    """shuffled section index containing address v, or -1 (boot's fgk_delta)"""
    if v < region_lo or v >= region_hi:
        return -1
    k = bisect.bisect_right(fg_start, v) - 1
    if k >= 0 and v < fg_end[k]:
        return fg_idx[k]
    return -1


def sec_near(v):
    """description of where v lies relative to the shuffled sections"""
    k = bisect.bisect_right(fg_start, v) - 1
    if k >= 0 and v == fg_end[k]:
        return 'end of ' + names[fg_idx[k]]
    return None


# sections by address (all allocated ones) for "which section" descriptions
alloc = sorted((shdrs[i][3], shdrs[i][3] + shdrs[i][5], i) for i in range(1, len(shdrs))
               if shdrs[i][2] & SHF_ALLOC and shdrs[i][5] and shdrs[i][3])
alloc_start = [a for a, _, _ in alloc]


def any_sec(v):
    k = bisect.bisect_right(alloc_start, v) - 1
    while k >= 0 and k > len(alloc) - 1:
        k -= 1
    if k >= 0 and v < alloc[k][1]:
        return names[alloc[k][2]]
    return None


def content(i, addr, n):
    s = shdrs[i]
    if s[1] == SHT_NOBITS:
        return None
    off = s[4] + (addr - s[3])
    return m[off:off + n]


# --- symbols
symtab = [i for i, s in enumerate(shdrs) if s[1] == SHT_SYMTAB][0]
st = shdrs[symtab]
strtab_off = shdrs[st[6]][4]
xidx = None
for i, s in enumerate(shdrs):
    if s[1] == SHT_SYMTAB_SHNDX and s[6] == symtab:
        xidx = s
nsym = st[5] // 24
sym_val = [0] * nsym
sym_shn = [0] * nsym
sym_name_off = [0] * nsym
k = 0
for (name, info, other, shndx, value, size) in struct.iter_unpack('<IBBHQQ', m[st[4]:st[4] + nsym * 24]):
    if shndx == 0xffff and xidx is not None:
        (shndx,) = struct.unpack_from('<I', m, xidx[4] + 4 * k)
    elif shndx >= 0xff00:
        shndx = -shndx  # ABS, COMMON: no section
    sym_val[k] = value
    sym_shn[k] = shndx
    sym_name_off[k] = name
    k += 1


def sym_name(k):
    n = cstr(strtab_off + sym_name_off[k]) if sym_name_off[k] else ''
    if not n and sym_shn[k] > 0:
        n = '[section %s]' % names[sym_shn[k]]
    return n


def host_sec(k):
    s = sym_shn[k]
    for vi in virt:
        a = shdrs[vi][3]
        if s > 0 and a <= sym_val[k] < a + shdrs[vi][5]:
            return vi
    if s <= 0 or s >= len(shdrs) or not isfg[s]:
        return -1
    a = shdrs[s][3]
    return s if a <= sym_val[k] < a + shdrs[s][5] else -1


hostsec = [host_sec(k) for k in range(nsym)]


def addr_sym(v):
    return None


# function symbols by address, for naming locations
funcs = sorted((sym_val[k], k) for k in range(1, nsym)
               if sym_shn[k] > 0 and sym_name_off[k] and
               (shdrs[sym_shn[k]][2] & SHF_EXEC))
func_addr = [a for a, _ in funcs]


def where(p):
    j = bisect.bisect_right(func_addr, p) - 1
    if j < 0:
        return hex(p)
    a, k = funcs[j]
    return '%s+0x%x' % (sym_name(k), p - a)


def symaddr(name):
    for k in range(nsym):
        if sym_name_off[k] and cstr(strtab_off + sym_name_off[k]) == name:
            return sym_val[k]
    return None


# tables: sorted after the link (contents differ from the relocations) and walked
sorted_ranges = []
for i, n in enumerate(names):
    if n in ('__ex_table', '.orc_unwind_ip') and shdrs[i][2] & SHF_ALLOC:
        sorted_ranges.append((shdrs[i][3], shdrs[i][3] + shdrs[i][5], n))
a, b = symaddr('__start_mcount_loc'), symaddr('__stop_mcount_loc')
if a is not None and b is not None:
    sorted_ranges.append((a, b, '__mcount_loc'))
walked = []
for n, s, e in (('.return_sites', '__return_sites', '__return_sites_end'),
                ('.retpoline_sites', '__retpoline_sites', '__retpoline_sites_end'),
                ('.call_sites', '__call_sites', '__call_sites_end')):
    a, b = symaddr(s), symaddr(e)
    if a is not None and b is not None:
        walked.append((a, b, n))


def in_ranges(rs, p):
    for a, b, n in rs:
        if a <= p < b:
            return n
    return None


ABS = {1: ('R_X86_64_64', 8), 10: ('R_X86_64_32', 4), 11: ('R_X86_64_32S', 4)}
PCREL = {2: 'R_X86_64_PC32', 4: 'R_X86_64_PLT32', 24: 'R_X86_64_PC64'}
SNAME = lambda i: names[i] if i >= 0 else '-'


def CLS(i):
    if i < 0:
        return '-'
    n = names[i]
    if n.startswith(FG_PREFIXES[1:]) or '/' in n:
        return n
    return '.text.<fn>'

groups = collections.OrderedDict()
counts = collections.Counter()


def report(key, ex):
    g = groups.setdefault(key, [0, []])
    g[0] += 1
    if len(g[1]) < NEX:
        g[1].append(ex)


percpu_shndx = [i for i, n in enumerate(names) if n == '.data..percpu']
percpu_shndx = percpu_shndx[0] if percpu_shndx else -1
percpu_load = symaddr('__per_cpu_load') or 0

for ri, rs in enumerate(shdrs):
    if rs[1] != SHT_RELA:
        continue
    x = rs[7]
    xs = shdrs[x]
    if not (xs[2] & SHF_ALLOC):
        continue
    xname = names[x]
    locsec_fg = isfg[x]
    n = rs[5] // 24
    base = rs[4]
    for (r_off, r_info, addend) in struct.iter_unpack('<QQq', m[base:base + n * 24]):
        t = r_info & 0xffffffff
        k = r_info >> 32
        counts['relocs'] += 1
        if t == 0 or k == 0:
            continue
        hs = hostsec[k]
        S = sym_val[k]
        if t in ABS:
            # the stored value (what the boot code reads)
            fsz = ABS[t][1]
            c = content(x, r_off, fsz)
            if c is None:
                continue
            if fsz == 8:
                (v,) = struct.unpack('<Q', c)
            else:
                (v,) = struct.unpack('<i', c)
                v &= M64
            sa = (S + addend) & M64
            if hs < 0 and not (region_lo <= v < region_hi) and not (region_lo <= sa < region_hi):
                continue
            counts['abs considered'] += 1
            tbl = in_ranges(sorted_ranges, r_off)
            if tbl:
                counts['abs in sorted table ' + tbl] += 1
                continue  # by value on both sides (host fix_sorted_tables)
            if sym_shn[k] == percpu_shndx and percpu_shndx >= 0:
                continue  # relocs tool skips per-CPU symbols
            if t == 1 and v != sa:
                counts['abs stored != S+A'] += 1
            elif t != 1 and (v & 0xffffffff) != (sa & 0xffffffff):
                counts['abs stored != S+A'] += 1
            bs = sec_at(v)
            if bs == hs:
                counts['abs consistent'] += 1
                continue
            if hs >= 0 and v == shdrs[hs][3] + shdrs[hs][5]:
                kind = 'value = end of symbol section'
            elif hs >= 0 and v < 0xffffffff80000000:
                kind = 'value physical/other (< 0xffffffff80000000)'
            elif hs >= 0 and bs >= 0:
                kind = 'value in another shuffled section'
            elif hs >= 0:
                kind = 'value in no shuffled section'
            else:
                kind = 'symbol not moving (host), value in shuffled section'
            key = (ABS[t][0], CLS(x) if locsec_fg else xname,
                   CLS(hs) if hs >= 0 else ('[sym in %s]' % (names[sym_shn[k]] if sym_shn[k] > 0 else 'ABS')),
                   kind)
            report(key, '%s @%x (%s): sym %s=%x +%d -> value %x in %s%s; host moves with %s, boot with %s' % (
                ABS[t][0], r_off, where(r_off) if xs[2] & SHF_EXEC else '%s+0x%x' % (xname, r_off - xs[3]),
                sym_name(k), S, addend, v, any_sec(v), (' (' + sec_near(v) + ')') if sec_near(v) else '',
                SNAME(hs), SNAME(bs)))
        elif t in PCREL:
            P = r_off + (percpu_load if x == percpu_shndx else 0)
            if hs < 0 and not locsec_fg:
                # neither moves by the symbol rule; check the value anyway
                tgt = (S + addend + 4) & M64
                if sec_at(tgt) < 0 and sec_at(S) < 0:
                    continue
            counts['pcrel considered'] += 1
            tbl = in_ranges(sorted_ranges, r_off)
            if tbl:
                counts['pcrel in sorted table ' + tbl] += 1
                continue
            wt = in_ranges(walked, r_off)
            if wt:
                # boot: by the value e + *e = S + A; relocs tool checks it
                v = (S + addend) & M64
                bs = sec_at(v)
                if bs != hs:
                    report(('PC32 walked', wt, SNAME(hs), 'walked entry: value section != symbol section'),
                           '@%x sym %s=%x +%d value %x host %s boot %s' % (
                               r_off, sym_name(k), S, addend, v, SNAME(hs), SNAME(bs)))
                else:
                    counts['pcrel walked consistent'] += 1
                continue
            # table: boot follows the symbol, like the host. Semantics: the
            # displacement target S + A + 4 (call/jmp/rip-relative with the
            # field last in the instruction); other instruction encodings
            # (an immediate after the field) give S + A + 4 + imm size.
            # data (a .long sym - . entry): the target is S + A
            insn = bool(xs[2] & SHF_EXEC)
            tgt = (S + addend + (4 if insn else 0)) & M64
            ts = sec_at(tgt)
            if ts == hs:
                counts['pcrel consistent'] += 1
                continue
            # a rip-relative with an immediate after the field: A = -5..-8
            if insn and hs >= 0 and -8 <= addend <= -5 and sec_at(S) == hs:
                counts['pcrel consistent (imm after field)'] += 1
                continue
            if hs >= 0 and tgt == shdrs[hs][3] + shdrs[hs][5]:
                kind = 'target = end of symbol section'
            elif hs >= 0 and ts >= 0:
                kind = 'target in another shuffled section'
            elif hs >= 0:
                kind = 'target in no shuffled section'
            elif sym_shn[k] > 0 and isfg[sym_shn[k]]:
                kind = 'symbol outside its shuffled section (treated fixed), target in %s' % (
                    'a shuffled section' if ts >= 0 else 'none')
            else:
                kind = 'symbol not moving, target in shuffled section'
            key = (PCREL[t], CLS(x) if locsec_fg else xname,
                   CLS(hs) if hs >= 0 else ('[sym in %s]' % (names[sym_shn[k]] if sym_shn[k] > 0 else 'ABS')),
                   kind)
            report(key, '%s @%x (%s): sym %s=%x %+d -> target %x in %s%s; both move it with %s, the target lies in %s' % (
                PCREL[t], P, where(P), sym_name(k), S, addend, tgt, any_sec(tgt),
                (' (' + sec_near(tgt) + ')') if sec_near(tgt) else '', SNAME(hs), SNAME(ts)))
            if insn:
                key2 = key
            else:
                key2 = None
        else:
            counts['other type %d' % t] += 1

# the sorted tables by contents: .orc_unwind_ip (boot: terminator -> the
# byte before the target; host relink: the same since it learnt the
# terminator rule; FGK_HOST_ORC=old models the relink before that, which
# moved a terminator as its own address)
ipi = [i for i, n in enumerate(names) if n == '.orc_unwind_ip']
oi = [i for i, n in enumerate(names) if n == '.orc_unwind']
if ipi and oi:
    ip, o = shdrs[ipi[0]], shdrs[oi[0]]
    nip = ip[5] // 4
    ipd = m[ip[4]:ip[4] + ip[5]]
    od = m[o[4]:o[4] + o[5]]
    for j in range(nip):
        (v,) = struct.unpack_from('<i', ipd, 4 * j)
        tgt = (ip[3] + 4 * j + v) & M64
        if '.orc_header' not in names:
            # 6.1: sp_reg:4 bp_reg:4 | type:2 end:1; sp_reg UNDEFINED && !end
            term = (od[6 * j + 4] & 0xf) == 0 and not (od[6 * j + 5] & 4)
        else:
            # 6.12: ... type:3; ORC_TYPE_UNDEFINED (0)
            term = (od[6 * j + 5] & 7) == 0
        bs = sec_at(tgt - 1 if term else tgt)
        hs = sec_at(tgt if os.environ.get('FGK_HOST_ORC') == 'old' or not term
                    else tgt - 1)
        if bs != hs:
            counts['orc_unwind_ip MISMATCH: host moves with ' + ('next section' if hs >= 0 else 'nothing (gap)') +
                   ', boot with ' + ('its section' if bs >= 0 else 'nothing')] += 1
            report(('orc_unwind_ip (contents)', '.orc_unwind_ip', CLS(bs),
                    'terminator: boot by byte before, host relink by target'),
                   'entry %d -> %x (%s) boot %s host %s' % (j, tgt, sec_near(tgt) or any_sec(tgt),
                                                            SNAME(bs), SNAME(hs)))
        else:
            counts['orc_unwind_ip consistent'] += 1

# __ex_table by contents (both sides by value): a field pointing exactly at
# the end of a shuffled section (a label after the last instruction) would
# move with the next section on both sides: consistent, but wrong
fg_end_set = {}
for k2, i2 in enumerate(fg_idx):
    fg_end_set[fg_end[k2]] = i2
for i, n in enumerate(names):
    if n != '__ex_table' or not (shdrs[i][2] & SHF_ALLOC):
        continue
    d = m[shdrs[i][4]:shdrs[i][4] + shdrs[i][5]]
    for j in range(0, len(d) - 11, 12):
        insn_sec = -1
        for fno, fld in ((0, 'insn'), (4, 'fixup')):
            (v,) = struct.unpack_from('<i', d, j + fno)
            tgt = (shdrs[i][3] + j + fno + v) & M64
            counts['__ex_table fields'] += 1
            if fno == 0:
                insn_sec = sec_at(tgt)
            # the end of a section that is not the start of the next one,
            # or a fixup at the end of its instruction's section
            if tgt in fg_end_set and (sec_at(tgt) < 0 or
                                      (fno == 4 and fg_end_set[tgt] == insn_sec)):
                report(('__ex_table (contents)', fld, CLS(fg_end_set[tgt]), 'target = end of a shuffled section'),
                       'entry @%x %s -> %x (end of %s, start of %s)' % (
                           shdrs[i][3] + j, fld, tgt, names[fg_end_set[tgt]], SNAME(sec_at(tgt))))
# __mcount_loc by contents: every call site inside a section
a, b = symaddr('__start_mcount_loc'), symaddr('__stop_mcount_loc')
if a is not None and b is not None and b > a:
    for i, n in enumerate(names):
        s2 = shdrs[i]
        if s2[2] & SHF_ALLOC and s2[1] == SHT_PROGBITS and s2[3] <= a < s2[3] + s2[5]:
            d = m[s2[4] + a - s2[3]:s2[4] + b - s2[3]]
            for (v,) in struct.iter_unpack('<Q', d):
                counts['__mcount_loc entries'] += 1
                if v in fg_end_set and sec_at(v) < 0:
                    report(('__mcount_loc (contents)', '', CLS(fg_end_set[v]), 'site = end of a shuffled section'), hex(v))
            break

print('vmlinux:', path)
print('shuffled sections:', len(fg_idx), 'region %x-%x' % (region_lo, region_hi))
for c, v in sorted(counts.items()):
    print('  %-45s %d' % (c, v))
print()
tot = collections.Counter()
for key, (cnt, ex) in groups.items():
    print('== %d  %s' % (cnt, ' | '.join(key)))
    for e in ex:
        print('     ', e)
    tot[key[-1]] += cnt
print()
for kk, v in tot.items():
    print('total %-60s %d' % (kk, v))
