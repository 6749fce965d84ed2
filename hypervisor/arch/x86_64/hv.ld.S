/* Linker script of pvmmu-hv (run through the C preprocessor for mm/layout.h).
 *
 * One ELF64 file that a Multiboot 1 loader can load as a flat binary (the
 * a.out kludge, boot/boot32.S): the loaded part is one contiguous range of the
 * file, [__hv_load_phys, __hv_load_end_phys) at file offset
 * (header offset - (header_addr - load_addr)); the bss follows up to
 * __hv_bss_end_phys. So every loadable section's file offset minus its
 * physical address must be the same constant: sections are page aligned in
 * both address spaces and the page size is 4 KiB (-z max-page-size=0x1000),
 * so ld places them back to back; tests/qemu/check_image.py verifies it.
 *
 * .boot runs before paging and is linked at its physical address (1 MiB);
 * the rest runs at HV_IMAGE_VIRT + physical, in L4 slot 261. Sections are page
 * aligned so mm/paging.cc can give each its own permissions: text RX, rodata R,
 * data and bss RW, never W and X together. */
#include "mm/layout.h"

OUTPUT_FORMAT("elf64-x86-64")
OUTPUT_ARCH(i386:x86-64)
ENTRY(_start32)

PHDRS
{
    boot   PT_LOAD FLAGS(5);   /* R X */
    text   PT_LOAD FLAGS(5);   /* R X */
    rodata PT_LOAD FLAGS(4);   /* R   */
    data   PT_LOAD FLAGS(6);   /* R W */
}

SECTIONS
{
    . = HV_IMAGE_PHYS;
    __hv_load_phys = .;
    .boot : {
        KEEP(*(.multiboot))       /* first: inside the first 8 KiB of the file */
        KEEP(*(.multiboot2))      /* Multiboot 2: the first 32 KiB, 8-byte aligned */
        *(.boot.text)
        *(.boot.data)
        . = ALIGN(4096);
    } :boot

    . += HV_IMAGE_VIRT;
    .text : AT(ADDR(.text) - HV_IMAGE_VIRT) {
        __hv_text_start = .;
        *(.text .text.*)
        . = ALIGN(4096);
        __hv_text_end = .;
    } :text

    .rodata : AT(ADDR(.rodata) - HV_IMAGE_VIRT) {
        __hv_rodata_start = .;
        *(.rodata .rodata.*)
        /* The fault-fixup table: (instruction, fixup) pairs (cpu/extable.h). */
        . = ALIGN(8);
        hv_extable = .;
        KEEP(*(.extable))
        hv_extable_end = .;
        /* Filled at link time in a static, non-PIE link: read-only. */
        *(.data.rel.ro .data.rel.ro.*)
        *(.got .got.plt .igot.plt)
        __hv_init_array_start = .;
        KEEP(*(.init_array .init_array.*))
        __hv_init_array_end = .;
        . = ALIGN(4096);
        __hv_rodata_end = .;
    } :rodata

    .data : AT(ADDR(.data) - HV_IMAGE_VIRT) {
        __hv_data_start = .;
        *(.data .data.*)
        . = ALIGN(4096);
        __hv_data_end = .;
    } :data
    __hv_load_end_phys = __hv_data_end - HV_IMAGE_VIRT;

    .bss (NOLOAD) : AT(ADDR(.bss) - HV_IMAGE_VIRT) {
        __hv_bss_start = .;
        *(.bss .bss.*)
        *(COMMON)
        . = ALIGN(4096);
        __hv_bss_end = .;
    } :data
    __hv_bss_end_phys = __hv_bss_end - HV_IMAGE_VIRT;

    /* Debug information, not loaded (--orphan-handling=error wants every
     * section named, so nothing lands in the image unplanned). */
    .debug_info 0 : { *(.debug_info) }
    .debug_abbrev 0 : { *(.debug_abbrev) }
    .debug_aranges 0 : { *(.debug_aranges) }
    .debug_line 0 : { *(.debug_line) }
    .debug_line_str 0 : { *(.debug_line_str) }
    .debug_str 0 : { *(.debug_str) }
    .debug_loclists 0 : { *(.debug_loclists) }
    .debug_rnglists 0 : { *(.debug_rnglists) }
    .debug_frame 0 : { *(.debug_frame) }
    .debug_loc 0 : { *(.debug_loc) }
    .debug_ranges 0 : { *(.debug_ranges) }
    .symtab 0 : { *(.symtab) }
    .strtab 0 : { *(.strtab) }
    .shstrtab 0 : { *(.shstrtab) }

    /DISCARD/ : {
        *(.eh_frame .eh_frame_hdr .note .note.* .comment .interp .dynamic .dynsym .dynstr .hash .gnu.hash)
        *(.fini_array*)           /* the hypervisor never exits through C++ */
        /* No IFUNCs and no run-time relocations in a static image. */
        *(.iplt .rela.iplt .rela.got .rela.text .rela.* .rela)
    }
}


ASSERT(SIZEOF(.boot) <= 0x1000, "the .boot section grew past one page")
/* Every global is initialised at compile time (constinit): nothing runs
 * before bsp_main, so nothing can run in the wrong order either. */
ASSERT(__hv_init_array_end == __hv_init_array_start,
       "a global needs a run-time constructor: make it constinit")
