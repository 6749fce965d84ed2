# Code that runs without an OS (docs/design.md §2): the hypervisor core and the guest
# library. No exceptions, no RTTI.
set(PVMMU_NO_OS_FLAGS -fno-exceptions -fno-rtti)

# pvmmu_freestanding_library(NAME SOURCES …)
# The static library NAME from SOURCES (headers in the calling folder's
# include/, public), compiled with PVMMU_NO_OS_FLAGS; and NAME_freestanding,
# the proof that it is freestanding-clean: the same sources compiled once more
# as an OBJECT library with -ffreestanding, no unwind tables, no red zone and
# no sanitizers. Built with `all`, so every build checks it; nothing links it.
function(pvmmu_freestanding_library name)
  cmake_parse_arguments(FL "" "" "SOURCES" ${ARGN})
  add_library(${name} STATIC ${FL_SOURCES})
  target_include_directories(${name} PUBLIC include)
  target_link_libraries(${name} PUBLIC pvmmu_abi pvmmu_x86)
  target_compile_options(${name} PRIVATE ${PVMMU_NO_OS_FLAGS})

  add_library(${name}_freestanding OBJECT ${FL_SOURCES})
  target_include_directories(${name}_freestanding PRIVATE include)
  target_link_libraries(${name}_freestanding PRIVATE pvmmu_abi pvmmu_x86)
  target_compile_options(${name}_freestanding PRIVATE ${PVMMU_NO_OS_FLAGS}
    -ffreestanding -fno-asynchronous-unwind-tables -mno-red-zone -fno-sanitize=all)
endfunction()
