#!/usr/bin/env python3
"""Checks that pvmmu-hv, an ELF64 file, is also a valid Multiboot 1 a.out-kludge
image, the way a loader (QEMU -kernel) will read it: Multiboot Specification
0.6.96 §3.1 — the header in the first 8192 bytes, 32-bit aligned, checksum,
flag bit 16 with header_addr/load_addr/load_end_addr/bss_end_addr/entry_addr —
and that the bytes the loader copies are the ELF's loadable segments at their
physical addresses (hv.ld.S keeps file offset - physical address constant).
Also a valid Multiboot 2 image (Multiboot2 Specification 2.0 §3.1), as GRUB's
`multiboot2` reads it: the header in the first 32768 bytes, 64-bit aligned,
checksum, well-formed 8-byte-aligned tags up to an end tag, an address tag and
an entry address tag that say exactly what the Multiboot 1 header says (so
both loaders put the same bytes at the same places and enter at the same
instruction), and a required information request that includes the memory map.

usage: check_image.py IMAGE      exit 0 when valid, 1 with the reasons when not
"""
import struct
import sys

MB1_MAGIC = 0x1BADB002
MB2_MAGIC = 0xE85250D6
MB2_TAG_END, MB2_TAG_INFO_REQUEST, MB2_TAG_ADDRESS, MB2_TAG_ENTRY = 0, 1, 2, 3
MB2_INFO_MMAP = 6
AOUT_KLUDGE = 1 << 16
PT_LOAD = 1
PF_X = 1


def main(path):
    data = open(path, "rb").read()
    errors = []

    def check(ok, msg):
        if not ok:
            errors.append(msg)
        return ok

    if not check(data[:4] == b"\x7fELF" and data[4] == 2 and data[18:20] == struct.pack("<H", 62),
                 "not an ELF64 x86-64 file"):
        return report(path, errors)
    e_entry, e_phoff = struct.unpack_from("<QQ", data, 24)
    e_phentsize, e_phnum = struct.unpack_from("<HH", data, 54)
    segs = []
    for i in range(e_phnum):
        p_type, p_flags, off, vaddr, paddr, filesz, memsz, _ = struct.unpack_from(
            "<IIQQQQQQ", data, e_phoff + i * e_phentsize)
        if p_type == PT_LOAD:
            segs.append(dict(flags=p_flags, off=off, vaddr=vaddr, paddr=paddr, filesz=filesz, memsz=memsz))
    check(segs, "no PT_LOAD segments")

    hdr_off = next((o for o in range(0, min(len(data), 8192) - 32, 4)
                    if struct.unpack_from("<I", data, o)[0] == MB1_MAGIC), None)
    if not check(hdr_off is not None, "no Multiboot 1 header in the first 8192 bytes"):
        return report(path, errors)
    magic, flags, csum, header_addr, load_addr, load_end, bss_end, entry = struct.unpack_from("<8I", data, hdr_off)
    check((magic + flags + csum) & 0xFFFFFFFF == 0, "header checksum does not sum to 0")
    check(flags & AOUT_KLUDGE, "flag bit 16 (address fields) not set: QEMU refuses ELF64 then")
    check(flags & 2, "flag bit 1 (memory map wanted) not set")
    check(load_addr >= 0x100000, f"load_addr 0x{load_addr:x} below 1 MiB")
    check(load_addr <= header_addr < load_end, "header_addr outside [load_addr, load_end_addr)")
    check(load_end <= bss_end, "load_end_addr above bss_end_addr")
    text_off = hdr_off - (header_addr - load_addr)
    check(text_off >= 0, "header_addr - load_addr exceeds the header's file offset")
    check(text_off + (load_end - load_addr) <= len(data), "loaded range runs past the end of the file")

    # Every segment's bytes must be where the loader puts the file's bytes.
    for s in segs:
        name = f"segment at paddr 0x{s['paddr']:x}"
        if s["filesz"]:
            check(s["off"] - s["paddr"] == text_off - load_addr,
                  f"{name}: file offset 0x{s['off']:x} does not match the flat load "
                  f"(expected 0x{s['paddr'] - load_addr + text_off:x})")
            check(load_addr <= s["paddr"] and s["paddr"] + s["filesz"] <= load_end,
                  f"{name}: file bytes outside [load_addr, load_end_addr)")
        check(s["paddr"] + s["memsz"] <= bss_end, f"{name}: ends past bss_end_addr")
    check(max(s["paddr"] + s["memsz"] for s in segs) == bss_end,
          "bss_end_addr is not the end of the last segment")

    boot = [s for s in segs if s["paddr"] <= entry < s["paddr"] + s["filesz"]]
    if check(boot, f"entry_addr 0x{entry:x} is in no loaded segment"):
        check(boot[0]["flags"] & PF_X, "entry_addr is not in an executable segment")
        check(boot[0]["vaddr"] == boot[0]["paddr"], "the entry segment is not linked at its physical address")
    check(e_entry == entry, f"ELF e_entry 0x{e_entry:x} != Multiboot entry_addr 0x{entry:x}")
    mb2_off = check_multiboot2(data, check, (header_addr - hdr_off, load_addr, load_end, bss_end, entry))
    if not errors:
        print(f"{path}: Multiboot 1 a.out-kludge image: header at file offset 0x{hdr_off:x}, "
              f"load 0x{load_addr:x}-0x{load_end:x}, bss to 0x{bss_end:x}, entry 0x{entry:x}, "
              f"{len(segs)} loadable segments consistent; Multiboot 2 header at file offset "
              f"0x{mb2_off:x} with the same address and entry")
    return report(path, errors)


def check_multiboot2(data, check, mb1):
    """The Multiboot 2 header; mb1 = (physical address of file offset 0 as
    the Multiboot 1 header implies it, load_addr, load_end_addr, bss_end_addr,
    entry_addr). Returns the header's file offset."""
    off = next((o for o in range(0, min(len(data), 32768) - 16, 8)
                if struct.unpack_from("<I", data, o)[0] == MB2_MAGIC), None)
    if not check(off is not None, "no 8-byte aligned Multiboot 2 header in the first 32768 bytes"):
        return None
    magic, arch, length, csum = struct.unpack_from("<4I", data, off)
    check((magic + arch + length + csum) & 0xFFFFFFFF == 0, "Multiboot 2 checksum does not sum to 0")
    check(arch == 0, f"Multiboot 2 architecture {arch}, not 0 (i386 protected mode)")
    tags, required, pos, end = {}, (), off + 16, off + length
    while check(pos + 8 <= end, "Multiboot 2 header: no end tag within header_length"):
        ttype, flags, size = struct.unpack_from("<HHI", data, pos)
        if not check(size >= 8 and pos + size <= end, f"Multiboot 2 tag {ttype}: bad size {size}"):
            break
        if ttype == MB2_TAG_END:
            check(size == 8 and pos + 8 == end, "Multiboot 2 end tag is not 8 bytes at the header's end")
            break
        if ttype == MB2_TAG_INFO_REQUEST and not flags & 1:
            required += struct.unpack_from(f"<{(size - 8) // 4}I", data, pos + 8)
        tags[ttype] = data[pos + 8:pos + size]
        pos = (pos + size + 7) & ~7
    if check(MB2_TAG_ADDRESS in tags and len(tags.get(MB2_TAG_ADDRESS, b"")) == 16,
             "Multiboot 2: no address tag (GRUB would load by the ELF headers)"):
        header_addr, load_addr, load_end, bss_end = struct.unpack_from("<4I", tags[MB2_TAG_ADDRESS])
        check(header_addr - off == mb1[0], "Multiboot 2 header_addr does not match its file offset "
              "the way the Multiboot 1 header's does: the two loaders would copy different bytes")
        check((load_addr, load_end, bss_end) == mb1[1:4],
              "Multiboot 2 load_addr/load_end_addr/bss_end_addr differ from Multiboot 1's")
    if check(MB2_TAG_ENTRY in tags and len(tags.get(MB2_TAG_ENTRY, b"")) == 4,
             "Multiboot 2: no entry address tag (required with an address tag)"):
        check(struct.unpack_from("<I", tags[MB2_TAG_ENTRY])[0] == mb1[4],
              "Multiboot 2 entry_addr differs from Multiboot 1's")
    check(MB2_INFO_MMAP in required, "Multiboot 2: no required information request for the memory map")
    return off


def report(path, errors):
    for e in errors:
        print(f"{path}: {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
