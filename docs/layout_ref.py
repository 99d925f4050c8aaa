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
    print("module nonce 'fgk_test'", module_nonce("fgk_test").hex())
    print("  perm(10)   ", " ".join(map(str, permutation(
        seed, 10, module_nonce("fgk_test")))))


if __name__ == "__main__":
    sys.exit(main())
