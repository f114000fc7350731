#!/usr/bin/env python3
"""Write the fuzzer's seed corpus: one small file per scenario.

Each operation is: op byte (bits 0-3 operation, 4-5 size class, 6-7
variant), slot byte, 16-bit little-endian size, and for some operations an
extra byte (see omfuzz.c).  Run from anywhere:  tests/fuzz/gen-seeds.py
"""
import os
import struct

OPS = ["malloc", "calloc", "realloc", "free", "aligned_alloc",
       "posix_memalign", "reallocarray", "recallocarray", "freezero",
       "usable", "fail", "check", "conceal", "realloc0", "nullarg",
       "pagealign"]
EXTRA = {"calloc", "conceal", "aligned_alloc", "posix_memalign",
         "reallocarray", "recallocarray", "fail"}


def decode(cls, v):
    """The size omfuzz.c's decode_size gives v in class cls."""
    if cls == 0:
        return v % 65
    if cls == 1:
        return v % 4097
    if cls == 2:
        return v
    return v * 32 if v < 0x8000 else (1 << 20) + (v - 0x8000) * 64


def op(name, slot, size, cls=None, variant=0, x=0):
    """Encode one operation; the class is chosen to represent size exactly."""
    if cls is None:
        if size <= 64:
            cls = 0
        elif size <= 4096:
            cls = 1
        elif size <= 65535:
            cls = 2
        else:
            cls = 3
    if cls != 3:
        v = size
    elif size < 1 << 20:
        v = size // 32
    else:
        v = 0x8000 + (size - (1 << 20)) // 64
    assert v <= 0xffff and size == decode(cls, v), (name, size)
    b = bytes([OPS.index(name) | cls << 4 | variant << 6, slot]) + \
        struct.pack("<H", v)
    if name in EXTRA:
        b += bytes([x])
    return b


def seeds():
    page = 4096
    edge = [0, 1, 15, 16, 17, 31, 32, 63, 64, 100, 1000, 2047, 2048, 2049,
            4095, 4096, 4097, 8191, 8192, 12288, 65535, 65536, 1 << 20,
            (1 << 21) - 64, (1 << 21) + 4096, (3 << 20) - 64]
    yield "malloc-edges", b"".join(op("malloc", i, s) for i, s in
                                   enumerate(edge))
    yield "calloc-edges", b"".join(op("calloc", i, s, x=i) for i, s in
                                   enumerate(edge))
    # Grow one block through every class, then shrink it back.
    chain = [op("malloc", 0, 1)]
    for s in edge[1:] + edge[::-1]:
        chain.append(op("realloc", 0, s))
    yield "realloc-chain", b"".join(chain)
    yield "reallocarray-chain", b"".join(
        [op("malloc", 1, 8)] + [op("reallocarray", 1, s, x=s % 8)
                                for s in edge[1:]])
    yield "recallocarray-chain", b"".join(
        [op("calloc", 2, 16, x=3)] + [op("recallocarray", 2, s, x=4)
                                     for s in edge[1:] + edge[::-1]])
    yield "aligned", b"".join(
        op("aligned_alloc", i, s, x=a, variant=i & 1)
        for i, (s, a) in enumerate((s, a) for a in range(0, 21, 2)
                                   for s in (0, 24, 3000, 69984)))
    yield "posix_memalign", b"".join(
        op("posix_memalign", i, s, x=a)
        for i, (s, a) in enumerate((s, a) for a in range(0, 19, 3)
                                   for s in (1, 2048, 5000, 1 << 17)))
    yield "pagealign", b"".join(op("pagealign", i, s, variant=i & 1)
                                for i, s in enumerate(edge[:18]))
    yield "freezero", b"".join(
        [op("malloc", i, s) for i, s in enumerate(edge[:20])] +
        [op("freezero", i, s // 2, variant=i & 1)
         for i, s in enumerate(edge[:20])])
    yield "fail", b"".join(
        [op("malloc", i, 100 * i) for i in range(4)] +
        [op("fail", i % 4, 0, variant=v, x=x) for i, (v, x) in
         enumerate((v, x) for v in range(4) for x in range(8))] +
        [op("check", 0, 0)])
    yield "conceal", b"".join(
        op("conceal", i, s, variant=i & 1, x=1) for i, s in
        enumerate(edge[:20])) + op("realloc", 3, 5000) + op("check", 0, 0)
    yield "zero", b"".join(
        [op("malloc", i, 0) for i in range(8)] +
        [op("realloc0", i + 8, 0) for i in range(8)] +
        [op("malloc", 20, 100), op("realloc0", 20, 0),
         op("realloc", 20, 50), op("usable", 20, 0),
         op("nullarg", 30, 10), op("free", 31, 0), op("freezero", 32, 0),
         op("usable", 33, 0), op("recallocarray", 34, 40, x=2)])
    # Many small blocks of one class freed in a shuffled order, then reused.
    order = [(i * 37) % 64 for i in range(64)]
    yield "churn", b"".join(
        [op("malloc", i, 48) for i in range(64)] +
        [op("free", i, 0) for i in order] +
        [op("malloc", i, 48 + i % 3) for i in order] +
        [op("usable", i, 0) for i in range(64)] + [op("check", 0, 0)])
    # Blocks longer than a pool caches at first, freed and asked for
    # again: the pool starts keeping runs of their length.
    big = [(1 << 21) + 4096, (5 << 19) + 64, (11 << 18) + 192,
           (3 << 20) - 64]
    yield "long-runs", b"".join(
        [op("malloc", i, s) for i, s in enumerate(big)] +
        [op("free", i, 0) for i in range(len(big))] +
        [op("malloc", i + 4, s) for i, s in enumerate(big)] +
        [op("realloc", i + 4, s + 8192 if i < 2 else s - 8192)
         for i, s in enumerate(big)] +
        [op("free", i + 4, 0) for i in range(len(big))] +
        [op("calloc", i, s, x=1) for i, s in enumerate(big)] +
        [op("check", 0, 0)])
    yield "pages", b"".join(
        [op("malloc", i, page * (1 + i % 5) + (i % 3) * 100)
         for i in range(40)] +
        [op("realloc", i, page * (1 + (i * 7) % 9)) for i in range(40)] +
        [op("free", i, 0) for i in range(0, 40, 2)] +
        [op("malloc", i, page * 2) for i in range(0, 40, 2)])

    # Blocks freed by the second thread, plainly and by size: the chunks
    # fill its queue of frees into this thread's pool twice over, the
    # page runs are freed at once, and the slots are taken again.
    sizes = [16 + (i * 40) % 2000 for i in range(56)] + \
        [page, 3 * page, 65536, 70016]
    yield "remote", b"".join(
        [op("malloc", i, s) for i, s in enumerate(sizes)] +
        [op("aligned_alloc", 60 + i, 100, x=6 + i) for i in range(4)] +
        [op("free", i, 0, variant=2 + (i & 1)) for i in range(64)] +
        [op("malloc", i, s) for i, s in enumerate(sizes)] +
        [op("free", i, 0, variant=2 + (i % 3 == 0)) for i in range(0, 60, 2)]
        + [op("realloc", i, 5000) for i in range(1, 60, 2)] +
        [op("check", 0, 0)])


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    os.makedirs(out, exist_ok=True)
    for name, data in seeds():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
