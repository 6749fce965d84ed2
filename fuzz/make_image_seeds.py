#!/usr/bin/env python3
"""Writes the seed inputs of the image fuzzer (fuzz/image_harness.h).

Small synthetic guest kernels, written here field by field (ELF64 header,
program headers, Xen's notes of <xen/elfnote.h>): one with the note set a
Linux x86-64 PV kernel carries (VIRT_BASE 0xffffffff80000000, its segment
16 MiB up, INIT_P2M, features, ...), one of each note type and size, one
with the legacy `__xen_guest` string, one linked at 0, and bzImages around
one (an ELF payload, and an XZ one when Python has lzma). With --kernel,
the project's own guest kernels (built ELF files) as well, each rewritten
small: its header and program headers, its notes, and the first 512 bytes of
each loadable segment (p_memsz kept), so libFuzzer mutates what the loader
reads rather than 100 KiB of code.
    python3 fuzz/make_image_seeds.py OUT_DIR [--kernel FILE]...
fuzz/image_corpus/ holds the synthetic ones (regenerate it with this script).
"""
import os
import struct
import sys

PT_LOAD, PT_NOTE = 1, 4
# <xen/elfnote.h>
ENTRY, HYPERCALL_PAGE, VIRT_BASE, PADDR_OFFSET, XEN_VERSION, GUEST_OS = 1, 2, 3, 4, 5, 6
GUEST_VERSION, LOADER, PAE_MODE, FEATURES, HV_START_LOW, L1_MFN_VALID = 7, 8, 9, 10, 12, 13
SUSPEND_CANCEL, INIT_P2M, MOD_START_PFN, SUPPORTED_FEATURES, PHYS32_ENTRY = 14, 15, 16, 17, 18


def note(kind, desc, name=b"Xen\0"):
    pad = lambda b: b + b"\0" * (-len(b) % 4)
    return struct.pack("<III", len(name), len(desc), kind) + pad(name) + pad(desc)


def q(v): return struct.pack("<Q", v & (2**64 - 1))
def l(v): return struct.pack("<I", v)
def s(v): return v.encode() + b"\0"


def elf(notes, loads, entry, sections=b"", shdrs=None):
    """notes: bytes of one PT_NOTE; loads: [(paddr, data, memsz)]."""
    nph = 1 + len(loads)
    off = 64 + 56 * nph
    body = bytearray(notes)
    phdrs = [struct.pack("<IIQQQQQQ", PT_NOTE, 4, off, 0, 0, len(notes), len(notes), 4)]
    for paddr, data, memsz in loads:
        while (off + len(body)) % 16:
            body.append(0)
        at = off + len(body)
        phdrs.append(struct.pack("<IIQQQQQQ", PT_LOAD, 5, at, paddr, paddr, len(data), memsz, 4096))
        body += data
    shoff = shnum = shstrndx = 0
    if shdrs is not None:
        base = off + len(body)
        body += sections
        while (off + len(body)) % 8:
            body.append(0)
        shoff, shnum, shstrndx = off + len(body), len(shdrs), 1
        for name, kind, at, size in shdrs:
            body += struct.pack("<IIQQQQIIQQ", name, kind, 0, 0, base + at if size else 0, size, 0, 0, 1, 0)
    ehdr = (b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9 +
            struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, entry, 64, shoff, 0, 64, 56, nph, 64, shnum, shstrndx))
    return bytes(ehdr) + b"".join(phdrs) + bytes(body)


def text(n=256):
    return bytes((0x90 if i % 7 else 0xc3) for i in range(n))


def linux_like():
    """The notes of a Linux x86-64 PV kernel: the image at 16 MiB above
    VIRT_BASE, PADDR_OFFSET 0."""
    base, kernel = 0xffffffff80000000, 0xffffffff81000000
    notes = b"".join([
        note(GUEST_OS, s("linux")), note(GUEST_VERSION, s("2.6")), note(XEN_VERSION, s("xen-3.0")),
        note(VIRT_BASE, q(base)), note(ENTRY, q(kernel + 0x40)), note(HYPERCALL_PAGE, q(kernel + 0x1000)),
        note(FEATURES, s("!writable_page_tables|pae_pgdir_above_4gb")),
        note(SUPPORTED_FEATURES, l(0x801)), note(PAE_MODE, s("yes")),
        note(L1_MFN_VALID, q(1) + q(1)), note(SUSPEND_CANCEL, l(1)), note(MOD_START_PFN, l(1)),
        note(HV_START_LOW, q(0xffff800000000000)), note(PADDR_OFFSET, q(0)),
        note(INIT_P2M, q(0x8000000000)), note(LOADER, s("generic")), note(PHYS32_ENTRY, l(0x1000000)),
    ])
    return elf(notes, [(0x1000000, text(), 0x3000)], kernel + 0x40)


def pvmmu_like(sizes=8):
    """pvmmu's own layout (guest/platform/xenpv/head.S): VIRT_BASE =
    PADDR_OFFSET, the image 2 MiB up; each value note given `sizes` bytes."""
    base, text_va = 0x8000000000, 0x8000200000
    v = lambda x: q(x)[:sizes]
    notes = b"".join([note(ENTRY, v(text_va)), note(HYPERCALL_PAGE, v(text_va + 0x1000)),
                      note(VIRT_BASE, v(base)), note(PADDR_OFFSET, v(base)),
                      note(FEATURES, s("!mmu_pt_update_preserve_ad")), note(LOADER, s("generic")),
                      note(XEN_VERSION, s("xen-3.0"))])
    return elf(notes, [(text_va, text(), 0x2000), (text_va + 0x2000, b"\1" * 64, 0x1000)], text_va)


def every_note():
    """Every note type 0..18 with 0, 1, 4 and 8 bytes of description."""
    notes = b"".join(note(t, q(0x8000200000)[:n]) for t in range(19) for n in (0, 1, 4, 8))
    notes += note(LOADER, s("generic")) + note(XEN_VERSION, s("xen-3.0"))
    return elf(notes, [(0x8000200000, text(), 0x1000)], 0x8000200000)


def legacy():
    """No notes: the __xen_guest section's string, HYPERCALL_PAGE a page number."""
    guest = s("GUEST_OS=linux,XEN_VER=xen-3.0,VIRT_BASE=0x8000000000,ELF_PADDR_OFFSET=0x8000000000,"
              "HYPERCALL_PAGE=0x201,FEATURES=!writable_page_tables,PAE=yes")
    names = b"\0.shstrtab\0__xen_guest\0"
    shdrs = [(0, 0, 0, 0), (1, 3, 0, len(names)), (11, 1, len(names), len(guest))]
    return elf(b"", [(0x8000200000, text(), 0x2000)], 0x8000200040, names + guest, shdrs)


def linked_at_zero():
    notes = note(LOADER, s("generic")) + note(XEN_VERSION, s("xen-3.0")) + note(HYPERCALL_PAGE, q(0x2000))
    return elf(notes, [(0, text(), 0x4000)], 0x100)


def bzimage(payload):
    """setup_sects 1: the protected-mode part at 0x400, the payload at its start."""
    f = bytearray(0x400)
    f[0x1f1] = 1
    f[0x202:0x206] = b"HdrS"
    f[0x206:0x208] = struct.pack("<H", 0x20f)
    f[0x248:0x24c] = l(0)
    f[0x24c:0x250] = l(len(payload))
    return bytes(f) + payload + b"\xee" * 8


def shrink(data, keep=512):
    """A built ELF kernel without its section headers and most of its bytes."""
    e_phoff, = struct.unpack_from("<Q", data, 32)
    e_phnum, = struct.unpack_from("<H", data, 56)
    phdrs = [list(struct.unpack_from("<IIQQQQQQ", data, e_phoff + 56 * i)) for i in range(e_phnum)]
    off = 64 + 56 * e_phnum
    body = bytearray()
    for ph in phdrs:
        n = ph[5] if ph[0] == PT_NOTE else min(ph[5], keep) if ph[0] == PT_LOAD else 0
        chunk = data[ph[2]:ph[2] + n]
        while (off + len(body)) % 16:
            body.append(0)
        ph[2], ph[5] = off + len(body), len(chunk)
        body += chunk
    ehdr = bytearray(data[:64])
    struct.pack_into("<QQ", ehdr, 32, 64, 0)             # e_phoff, e_shoff
    struct.pack_into("<HHH", ehdr, 58, 64, 0, 0)         # e_shentsize, e_shnum, e_shstrndx
    return bytes(ehdr) + b"".join(struct.pack("<IIQQQQQQ", *ph) for ph in phdrs) + bytes(body)


def seeds():
    out = {"linux-notes": linux_like(), "pvmmu-notes": pvmmu_like(), "pvmmu-notes-4-byte": pvmmu_like(4),
           "every-note": every_note(), "legacy-xen-guest": legacy(), "linked-at-zero": linked_at_zero(),
           "bzimage-elf": bzimage(pvmmu_like())}
    try:
        import lzma
        x = lzma.compress(linux_like(), format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32)
        out["bzimage-xz"] = bzimage(x + l(len(linux_like())))
    except ImportError:
        pass
    return out


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    dest, kernels, i = argv[0], [], 1
    while i < len(argv):
        if argv[i] != "--kernel" or i + 1 >= len(argv):
            print(f"make_image_seeds.py: unknown argument '{argv[i]}'", file=sys.stderr)
            return 2
        kernels.append(argv[i + 1])
        i += 2
    os.makedirs(dest, exist_ok=True)
    for name, data in seeds().items():
        with open(os.path.join(dest, "seed-" + name), "wb") as f:
            f.write(data)
    for k in kernels:
        # build/guest/platform/xenpv/NAME/kernel: named after NAME
        name = os.path.basename(os.path.dirname(os.path.abspath(k))) if os.path.basename(k) == "kernel" else os.path.basename(k)
        with open(k, "rb") as f:
            data = f.read()
        with open(os.path.join(dest, "kernel-" + name), "wb") as f:
            f.write(shrink(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
