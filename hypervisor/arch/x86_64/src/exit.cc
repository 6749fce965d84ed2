// hv_exit and panic; see arch/exit.h.
#include "arch/exit.h"

#include "arch/console.h"
#include "arch/percpu.h"
#include "arch/x86.h"

namespace pvmmu::x86 {

void hv_exit(uint32_t code)
{
    cli();
    outl(DEBUG_EXIT_PORT, code);
    halt_forever();
}

void panic(const char* fmt, ...)
{
    cli();
    panic_printk("PANIC: cpu %u: ", this_cpu_id());
    va_list ap;
    va_start(ap, fmt);
    panic_vprintk(fmt, ap);
    va_end(ap);
    panic_printk("\n");
    hv_exit(HV_EXIT_PANIC);
}

} // namespace pvmmu::x86
