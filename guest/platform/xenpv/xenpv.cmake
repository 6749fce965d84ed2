# Building guest kernels for the bare-metal hypervisor (docs/abi.md §10):
# ELF64 executables with Xen's ELF notes (head.S), linked with xenpv.ld at
# XENPV_VIRT_BASE + 2 MiB. Freestanding: no libc, no exceptions, no RTTI, no
# SSE (the hypervisor keeps no FPU state), no red zone (hypercall stubs push
# on the guest's stack). As the hypervisor image: position-independent code
# with hidden visibility, linked static and non-PIE, since the image sits at
# 512 GiB, beyond every fixed code model. Targets must live in a directory
# whose compile options are not the tree's (no sanitizers): this file is
# included from hypervisor/arch/x86_64 and guest/platform/xenpv, which reset them.
set(PVMMU_XENPV_DIR ${CMAKE_CURRENT_LIST_DIR})
set(PVMMU_XENPV_VIRT_BASE 0x8000000000)   # L4 slot 1, the core builder's default physmap

# pvmmu_xenpv_flags(TARGET): the compile options of guest-kernel code.
function(pvmmu_xenpv_flags target)
  set(_w -Wall -Wextra -Wshadow)
  if(PVMMU_WERROR)
    list(APPEND _w -Werror)
  endif()
  target_link_libraries(${target} PRIVATE pvmmu_abi pvmmu_x86)
  target_compile_definitions(${target} PRIVATE XENPV_VIRT_BASE=${PVMMU_XENPV_VIRT_BASE})
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:${_w} -std=c++20 -ffreestanding -fno-exceptions -fno-rtti
      -fno-threadsafe-statics -fno-use-cxa-atexit -mno-red-zone -mgeneral-regs-only
      -fno-asynchronous-unwind-tables -fno-unwind-tables -fpie -fvisibility=hidden
      -fno-stack-protector -fcf-protection=none -fno-sanitize=all -O2 -g>
    $<$<COMPILE_LANGUAGE:ASM>:${_w} -g>)
endfunction()

# pvmmu_xenpv_guest(NAME SOURCES src... [DEFINES d...] [OBJECTS objlib...]
#                   [INCLUDES dir...]): one guest kernel.
function(pvmmu_xenpv_guest name)
  cmake_parse_arguments(G "" "" "SOURCES;DEFINES;OBJECTS;INCLUDES" ${ARGN})
  set(_objs "")
  foreach(_o ${G_OBJECTS})
    list(APPEND _objs $<TARGET_OBJECTS:${_o}>)
  endforeach()
  add_executable(${name} ${PVMMU_XENPV_DIR}/head.S ${G_SOURCES} ${_objs})
  pvmmu_xenpv_flags(${name})
  target_include_directories(${name} PRIVATE ${PVMMU_XENPV_DIR} ${G_INCLUDES})
  target_compile_definitions(${name} PRIVATE ${G_DEFINES})
  target_link_options(${name} PRIVATE
    -nostdlib -static -no-pie -Wl,-T,${PVMMU_XENPV_DIR}/xenpv.ld
    -Wl,--defsym=XENPV_VIRT_BASE=${PVMMU_XENPV_VIRT_BASE} -Wl,-z,max-page-size=0x1000
    -Wl,--build-id=none -Wl,-z,noexecstack -Wl,-z,norelro)
  set_target_properties(${name} PROPERTIES LINK_DEPENDS ${PVMMU_XENPV_DIR}/xenpv.ld)
endfunction()
