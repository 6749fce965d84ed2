/* The assembly side of SMAP (cpu/cpu_features.h): STAC opens the hypervisor's
 * window onto user pages, CLAC closes it, each only where the boot CPU turned
 * CR4.SMAP on (hv_smap), as both are #UD on a CPU without SMAP ("STAC—Set AC
 * Flag in EFLAGS Register", SDM Vol. 2B). They clobber RFLAGS' status flags. */
#pragma once

.macro SMAP_OPEN
	testb $1, hv_smap(%rip)
	jz .Lsmap_open_done\@
	stac
.Lsmap_open_done\@:
.endm

.macro SMAP_CLOSE
	testb $1, hv_smap(%rip)
	jz .Lsmap_close_done\@
	clac
.Lsmap_close_done\@:
.endm
