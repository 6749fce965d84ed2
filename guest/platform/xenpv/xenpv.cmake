# pvmmu_xenpv_guest(NAME SOURCES src... [DEFINES d...]): a guest kernel for
# the bare-metal hypervisor (docs/abi.md "Bare-metal guest ABI"), an ELF64
# executable with Xen's ELF notes, linked with guest/platform/xenpv/xenpv.ld
# at XENPV_VIRT_BASE + 2 MiB. Freestanding: no libc, no exceptions, no RTTI,
# no SSE (the hypervisor keeps no FPU state), no red zone (hypercall stubs
# push on the guest's stack). As the hypervisor image, position-independent
# code with hidden visibility linked static and non-PIE: the image sits at
# 512 GiB, beyond every fixed code model. Call it from a directory whose
# compile options are not the tree's (hypervisor/arch/x86_64 resets them).
set(PVMMU_XENPV_DIR ${CMAKE_CURRENT_LIST_DIR})
set(PVMMU_XENPV_VIRT_BASE 0x8000000000)   # L4 slot 1, the core builder's default physmap

function(pvmmu_xenpv_guest name)
  cmake_parse_arguments(G "" "" "SOURCES;DEFINES" ${ARGN})
  add_executable(${name} ${PVMMU_XENPV_DIR}/head.S ${G_SOURCES})
  target_include_directories(${name} PRIVATE ${PVMMU_XENPV_DIR})
  target_link_libraries(${name} PRIVATE pvmmu_abi)
  target_compile_definitions(${name} PRIVATE XENPV_VIRT_BASE=${PVMMU_XENPV_VIRT_BASE} ${G_DEFINES})
  set(_w -Wall -Wextra -Wshadow)
  if(PVMMU_WERROR)
    list(APPEND _w -Werror)
  endif()
  target_compile_options(${name} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:${_w} -std=c++20 -ffreestanding -fno-exceptions -fno-rtti
      -fno-threadsafe-statics -fno-use-cxa-atexit -mno-red-zone -mgeneral-regs-only
      -fno-asynchronous-unwind-tables -fno-unwind-tables -fpie -fvisibility=hidden
      -fno-stack-protector -fcf-protection=none -fno-sanitize=all -O2 -g>
    $<$<COMPILE_LANGUAGE:ASM>:${_w} -g>)
  target_link_options(${name} PRIVATE
    -nostdlib -static -no-pie -Wl,-T,${PVMMU_XENPV_DIR}/xenpv.ld
    -Wl,--defsym=XENPV_VIRT_BASE=${PVMMU_XENPV_VIRT_BASE} -Wl,-z,max-page-size=0x1000
    -Wl,--build-id=none -Wl,-z,noexecstack -Wl,-z,norelro)
  set_target_properties(${name} PROPERTIES LINK_DEPENDS ${PVMMU_XENPV_DIR}/xenpv.ld)
endfunction()
