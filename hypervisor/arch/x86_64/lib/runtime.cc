// The C++ runtime symbol a freestanding image still needs: __cxa_pure_virtual
// for abstract classes such as pvmmu::Platform (the string functions are in
// the root's lib/src/string.cc).
#include "boot/exit.h"

extern "C" void __cxa_pure_virtual() { pvmmu::x86::panic("pure virtual function called"); }
