#!/usr/bin/env python3
"""Checks that pvmmu-hv, an ELF64 file, is also a valid Multiboot 1 a.out-kludge
image, the way a loader (QEMU -kernel) will read it: Multiboot Specification
0.6.96 §3.1 — the header in the first 8192 bytes, 32-bit aligned, checksum,
flag bit 16 with header_addr/load_addr/load_end_addr/bss_end_addr/entry_addr —
and that the bytes the loader copies are the ELF's loadable segments at their
physical addresses (hv.ld.S keeps file offset - physical address constant).

usage: check_image.py IMAGE      exit 0 when valid, 1 with the reasons when not
"""
import struct
import sys

MB1_MAGIC = 0x1BADB002
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
    if not errors:
        print(f"{path}: Multiboot 1 a.out-kludge image: header at file offset 0x{hdr_off:x}, "
              f"load 0x{load_addr:x}-0x{load_end:x}, bss to 0x{bss_end:x}, entry 0x{entry:x}, "
              f"{len(segs)} loadable segments consistent")
    return report(path, errors)


def report(path, errors):
    for e in errors:
        print(f"{path}: {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
