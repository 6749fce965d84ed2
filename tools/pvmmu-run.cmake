# pvmmu-run (included from tools/CMakeLists.txt): runs guest programs
# (`./pvmmu run`). The programs it knows are the guest tests
# (guest/tests/CMakeLists.txt), compiled in as name -> binary.
get_property(_guest_tests GLOBAL PROPERTY PVMMU_GUEST_TESTS)
set(_inc "")
foreach(_t ${_guest_tests})
  string(APPEND _inc "{\"${_t}\", \"$<TARGET_FILE:guest-${_t}>\"},\n")
endforeach()
file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/pvmmu-run-programs.inc CONTENT "${_inc}")
add_executable(pvmmu-run pvmmu-run.cc)
target_include_directories(pvmmu-run PRIVATE ${CMAKE_CURRENT_BINARY_DIR})
foreach(_t ${_guest_tests})
  add_dependencies(pvmmu-run guest-${_t})
endforeach()
