#!/usr/bin/env python3
"""Reference implementation of docs/layout-spec.md, in plain Python.

It is deliberately independent of both the kernel series and libfgk: it
produces the test vectors printed in the spec (``python3 docs/layout_ref.py``)
and is itself checked against the RFC 8439 ChaCha20 block-function vector.
"""
import struct
import sys

MASK = 0xFFFFFFFF


def _rotl(v, c):
    return ((v << c) & MASK) | (v >> (32 - c))


def _qr(s, a, b, c, d):
    s[a] = (s[a] + s[b]) & MASK; s[d] = _rotl(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & MASK; s[b] = _rotl(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b]) & MASK; s[d] = _rotl(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & MASK; s[b] = _rotl(s[b] ^ s[c], 7)


def chacha20_block(key, counter, nonce):
    """RFC 8439 section 2.3: 32-byte key, 32-bit counter, 12-byte nonce."""
    assert len(key) == 32 and len(nonce) == 12
    st = [0x61707865, 0x3320646e, 0x79622d32, 0x6b206574]
    st += list(struct.unpack("<8I", key))
    st += [counter & MASK] + list(struct.unpack("<3I", nonce))
    w = st[:]
    for _ in range(10):
        _qr(w, 0, 4, 8, 12); _qr(w, 1, 5, 9, 13)
        _qr(w, 2, 6, 10, 14); _qr(w, 3, 7, 11, 15)
        _qr(w, 0, 5, 10, 15); _qr(w, 1, 6, 11, 12)
        _qr(w, 2, 7, 8, 13); _qr(w, 3, 4, 9, 14)
    return struct.pack("<16I", *[(a + b) & MASK for a, b in zip(w, st)])


TEXT_NONCE = b"fgkaslr-text"
SCHED_NONCE = b"fgkaslr-schd"
LOCK_NONCE = b"fgkaslr-lock"
SCAL_NONCE = b"fgkaslr-scal"
NOIN_NONCE = b"fgkaslr-noin"
IDLE_NONCE = b"fgkaslr-idle"

# Spec §3 (version 3): the shuffle domains, in address order:
# (name prefix, limit symbols (the first that vmlinux defines; needed only
#  when the domain has sections), nonce, the first layout version that has
#  the domain).
DOMAINS = [
    (".sched.text.", ("__sched_text_end",), SCHED_NONCE, 2),
    (".spinlock.text.", ("__lock_text_end",), LOCK_NONCE, 3),
    (".static_call.text.", ("__static_call_text_end",), SCAL_NONCE, 3),
    (".noinstr.text.", ("__fgkaslr_noinstr_end",), NOIN_NONCE, 3),
    (".cpuidle.text.", ("__cpuidle_text_end",), IDLE_NONCE, 3),
    (".text.", ("__fgkaslr_text_end", "_etext"), TEXT_NONCE, 1),
]
LAYOUT_VERSIONS = (1, 2, 3)
SHT_PROGBITS, SHF_ALLOC, SHF_EXECINSTR = 1, 0x2, 0x4


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def module_nonce(name):
    return b"fgkm" + struct.pack("<Q", fnv1a64(name.encode()))


class Rng:
    """The spec's generator: ChaCha20 keystream read as little-endian u32."""

    def __init__(self, seed, nonce=TEXT_NONCE):
        self.seed, self.nonce = seed, nonce
        self.counter, self.buf = 0, b""

    def u32(self):
        if not self.buf:
            self.buf = chacha20_block(self.seed, self.counter, self.nonce)
            self.counter += 1
        v, self.buf = struct.unpack("<I", self.buf[:4])[0], self.buf[4:]
        return v

    def below(self, n):
        """Uniform integer in [0, n) without modulo bias (n >= 1)."""
        threshold = (2**32 - n) % n
        while True:
            r = self.u32()
            if r >= threshold:
                return r % n


def permutation(seed, n, nonce=TEXT_NONCE):
    rng = Rng(seed, nonce)
    a = list(range(n))
    for i in range(n - 1, 0, -1):
        j = rng.below(i + 1)
        a[i], a[j] = a[j], a[i]
    return a


def place(sections, order, start, limit):
    """sections: list of (size, align); returns new addresses or None."""
    addr, out = start, [0] * len(sections)
    for k in order:
        size, align = sections[k]
        align = max(align, 1)
        addr = (addr + align - 1) // align * align
        out[k] = addr
        addr += size
    return out if addr <= limit else None


def domain_of(name, sh_type, sh_flags, sh_size, version=1):
    """Spec §3: the index into DOMAINS of a vmlinux section, or None."""
    if sh_type != SHT_PROGBITS or sh_size == 0:
        return None
    if sh_flags & (SHF_ALLOC | SHF_EXECINSTR) != SHF_ALLOC | SHF_EXECINSTR:
        return None
    for d, (prefix, _, _, since) in enumerate(DOMAINS):
        if version >= since and name.startswith(prefix):
            return d
    return None


def layout(sections, symbols, seed):
    """Spec §3-§7 for a whole vmlinux.

    sections: (name, sh_type, sh_flags, addr, size, align) in section
    header index order; symbols: {name: value}, including the absolute
    __fgkaslr_layout_version if vmlinux defines it.  Returns
    {section index: new address} of the randomized sections, or raises
    ValueError (unknown version, does not fit).
    """
    version = symbols.get("__fgkaslr_layout_version", 1)
    if version not in LAYOUT_VERSIONS:
        raise ValueError("vmlinux uses FG-KASLR layout version %d; "
                         "this reference knows 1-3" % version)
    out = {}
    for d, (prefix, limit_syms, nonce, _) in enumerate(DOMAINS):
        idx = [i for i, (name, t, f, _a, size, _al) in enumerate(sections)
               if domain_of(name, t, f, size, version) == d]
        if not idx:
            continue
        limit = next((symbols[n] for n in limit_syms if n in symbols), None)
        if limit is None:
            raise ValueError("%d %s* sections but no %s symbol"
                             % (len(idx), prefix, limit_syms[0]))
        start = min(sections[i][3] for i in idx)
        end = max(sections[i][3] + sections[i][4] for i in idx)
        if end > limit:
            raise ValueError("%s* sections extend beyond %s" % (prefix, limit_syms[0]))
        secs = [(sections[i][4], sections[i][5]) for i in idx]
        new = place(secs, permutation(seed, len(idx), nonce), start, limit)
        if new is None:
            raise ValueError("layout does not fit (%s)" % prefix)
        out.update(zip(idx, new))
    return out


def _selftest():
    key = bytes(range(32))
    nonce = bytes.fromhex("000000090000004a00000000")
    want = ("10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
            "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e")
    assert chacha20_block(key, 1, nonce).hex() == want, "RFC 8439 2.3.2 failed"


def main():
    _selftest()
    seeds = [bytes(range(32)), bytes(32),
             bytes.fromhex("ff" * 32)]
    for seed in seeds:
        rng = Rng(seed)
        print("seed", seed.hex())
        print("  u32[0..7]  ", " ".join("%08x" % rng.u32() for _ in range(8)))
        rng = Rng(seed)
        print("  below(10)x8", " ".join(str(rng.below(10)) for _ in range(8)))
        print("  perm(10)   ", " ".join(map(str, permutation(seed, 10))))
        print("  perm(1)    ", " ".join(map(str, permutation(seed, 1))))
    seed = bytes(range(32))
    secs = [(0x35, 16), (0x10, 16), (0x1, 16), (0x81, 64), (0x20, 16),
            (0x7, 1), (0x40, 16), (0x13, 16), (0x100, 4096), (0x2, 16)]
    order = permutation(seed, len(secs))
    new = place(secs, order, 0xffffffff81200000, 0xffffffff81202000)
    print("placement seed 000102..1f start 0xffffffff81200000"
          " limit 0xffffffff81202000")
    for i, (size, align) in enumerate(secs):
        print("  sec %d size 0x%x align %d -> 0x%x" % (i, size, align, new[i]))
    print("nonce fgkaslr-schd (the .sched.text.* domain, layout version 2)")
    for s in seeds:
        rng = Rng(s, SCHED_NONCE)
        print("seed", s.hex())
        print("  u32[0..7]  ", " ".join("%08x" % rng.u32() for _ in range(8)))
        print("  perm(12)   ", " ".join(map(str, permutation(s, 12, SCHED_NONCE))))
    # a two-domain vmlinux: .sched.text.* then the gap, then .text.*
    secs = [(".text", 1, 6, 0xffffffff81000000, 0x100, 16),
            (".sched.text.a.o", 1, 6, 0xffffffff81000110, 0x30, 16),
            (".sched.text.b.o", 1, 6, 0xffffffff81000140, 0x45, 16),
            (".sched.text.c.o", 1, 6, 0xffffffff81000190, 0x8, 16),
            (".text.f", 1, 6, 0xffffffff812001a0, 0x35, 16),
            (".text.g", 1, 6, 0xffffffff812001e0, 0x10, 16),
            (".text.h", 1, 6, 0xffffffff812001f0, 0x81, 64)]
    syms = {"__sched_text_start": 0xffffffff81000100,
            "__sched_text_end": 0xffffffff810001a0,
            "__fgkaslr_text_end": 0xffffffff81200400,
            "__fgkaslr_layout_version": 2}
    new = layout(secs, syms, seed)
    print("two domains, seed 000102..1f, __sched_text_end 0x%x,"
          " __fgkaslr_text_end 0x%x" % (syms["__sched_text_end"],
                                        syms["__fgkaslr_text_end"]))
    for i in sorted(new):
        print("  [%d] %s 0x%x -> 0x%x" % (i, secs[i][0], secs[i][3], new[i]))
    print("the range domains of layout version 3: their nonces")
    for prefix, _, nonce, since in DOMAINS[1:-1]:
        print("nonce %s (the %s* domain, layout version %d)"
              % (nonce.decode(), prefix, since))
        for s in seeds[:2]:
            rng = Rng(s, nonce)
            print("seed", s.hex())
            print("  u32[0..3]  ", " ".join("%08x" % rng.u32() for _ in range(4)))
            print("  perm(8)    ", " ".join(map(str, permutation(s, 8, nonce))))
    # a vmlinux with every domain (layout version 3), .cpuidle.text.* inside
    # the noinstr bounds as on 6.12
    secs = [(".text", 1, 6, 0xffffffff81000000, 0x100, 16),
            (".sched.text.a.o", 1, 6, 0xffffffff81000110, 0x30, 16),
            (".sched.text.b.o", 1, 6, 0xffffffff81000140, 0x45, 16),
            (".spinlock.text.a.o", 1, 6, 0xffffffff81000210, 0x28, 16),
            (".spinlock.text.b.o", 1, 6, 0xffffffff81000240, 0x11, 32),
            (".spinlock.text.c.o", 1, 6, 0xffffffff81000260, 0x1e, 16),
            (".static_call.text.a.o", 1, 6, 0xffffffff81000308, 0x10, 8),
            (".static_call.text.b.o", 1, 6, 0xffffffff81000318, 0x5, 4),
            (".noinstr.text.a.o", 1, 6, 0xffffffff81000350, 0x46, 16),
            (".noinstr.text.b.o", 1, 6, 0xffffffff810003a0, 0x2d, 16),
            (".noinstr.text.c.o", 1, 6, 0xffffffff810003d0, 0x21, 64),
            (".cpuidle.text.a.o", 1, 6, 0xffffffff81000510, 0x1d, 16),
            (".cpuidle.text.b.o", 1, 6, 0xffffffff81000530, 0x36, 16),
            (".text.f", 1, 6, 0xffffffff812001a0, 0x35, 16),
            (".text.g", 1, 6, 0xffffffff812001e0, 0x10, 16),
            (".text.h", 1, 6, 0xffffffff812001f0, 0x81, 64)]
    syms = {"__sched_text_start": 0xffffffff81000100,
            "__sched_text_end": 0xffffffff810001a0,
            "__lock_text_start": 0xffffffff81000200,
            "__lock_text_end": 0xffffffff810002f0,
            "__static_call_text_start": 0xffffffff81000300,
            "__static_call_text_end": 0xffffffff81000340,
            "__noinstr_text_start": 0xffffffff81000340,
            "__fgkaslr_noinstr_end": 0xffffffff81000500,
            "__cpuidle_text_start": 0xffffffff81000500,
            "__cpuidle_text_end": 0xffffffff81000590,
            "__noinstr_text_end": 0xffffffff81000590,
            "__fgkaslr_text_end": 0xffffffff81200400,
            "__fgkaslr_layout_version": 3}
    new = layout(secs, syms, seed)
    print("six domains (layout version 3), seed 000102..1f, limits",
          ", ".join("%s 0x%x" % (d[1][0], syms[d[1][0]]) for d in DOMAINS))
    for i in sorted(new):
        print("  [%d] %s 0x%x -> 0x%x" % (i, secs[i][0], secs[i][3], new[i]))
    print("module nonce 'fgk_test'", module_nonce("fgk_test").hex())
    print("  perm(10)   ", " ".join(map(str, permutation(
        seed, 10, module_nonce("fgk_test")))))


if __name__ == "__main__":
    sys.exit(main())
