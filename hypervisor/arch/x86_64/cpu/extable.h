/* The fault-fixup table: pairs (faulting instruction, where to resume) that
 * the assembly adds next to each instruction allowed to fault in ring 0
 * (mm/guest_copy.S, pv/segment_base.S), collected by the linker script into
 * one array, hv_extable .. hv_extable_end (hv.ld.S), which ring0_fixup
 * (cpu/traps.cc) searches. For the assembly only. */
#pragma once

#define EXTABLE_ENTRY(insn, fixup) \
	.pushsection .extable, "a"; .balign 8; .quad insn, fixup; .popsection
