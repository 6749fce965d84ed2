# pvmmu_freestanding_check(NAME SOURCES … [INCLUDES …] [OPTIONS …])
# The proof that a library is freestanding-clean (SPEC §2): its sources compiled
# once more as an OBJECT library with -ffreestanding, no unwind tables, no red
# zone and no sanitizers. Built with `all`, so every build checks it; nothing
# links it.
function(pvmmu_freestanding_check name)
  cmake_parse_arguments(FS "" "" "SOURCES;INCLUDES;OPTIONS" ${ARGN})
  add_library(${name} OBJECT ${FS_SOURCES})
  target_include_directories(${name} PRIVATE ${FS_INCLUDES})
  target_link_libraries(${name} PRIVATE pvmmu_abi)
  target_compile_options(${name} PRIVATE ${FS_OPTIONS}
    -ffreestanding -fno-asynchronous-unwind-tables -mno-red-zone -fno-sanitize=all)
endfunction()
