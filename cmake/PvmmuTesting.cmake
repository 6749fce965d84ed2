# pvmmu_add_gtest(NAME LABELS l1 [l2...] SOURCES s1 [s2...] [LIBS ...])
# One GoogleTest executable whose tests are registered one by one with CTest,
# every one carrying the labels (unit, concurrency, guest, ...).
include(GoogleTest)
find_package(GTest REQUIRED)

# pvmmu_label_needs("l1;l2" TARGET...): the tests of these labels need these
# targets built. The sanitizer trees build only what their label needs
# (tools/cli/test.sh: target tests-unit in build-asan/, tests-concurrency in
# build-tsan/), not the hypervisor image, the guests and the ISO; a test of
# such a label run by a program of the tree names that program here.
set(PVMMU_SANITIZER_LABELS unit concurrency)
function(pvmmu_label_needs labels)
  foreach(_l IN LISTS labels)
    set_property(GLOBAL APPEND PROPERTY PVMMU_LABEL_TARGETS_${_l} ${ARGN})
  endforeach()
endfunction()

# The targets tests-unit and tests-concurrency (PVMMU_SANITIZER_LABELS), made
# once every directory has named what its tests need.
function(pvmmu_add_label_targets)
  foreach(_l IN LISTS PVMMU_SANITIZER_LABELS)
    get_property(_targets GLOBAL PROPERTY PVMMU_LABEL_TARGETS_${_l})
    add_custom_target(tests-${_l})
    if(_targets)
      list(REMOVE_DUPLICATES _targets)
      add_dependencies(tests-${_l} ${_targets})
    endif()
  endforeach()
endfunction()

function(pvmmu_add_gtest name)
  cmake_parse_arguments(T "" "TIMEOUT" "LABELS;SOURCES;LIBS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_executable(${name} ${T_SOURCES})
  pvmmu_label_needs("${T_LABELS}" ${name})
  target_link_libraries(${name} PRIVATE GTest::gtest GTest::gtest_main ${T_LIBS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
  # gtest_discover_tests(PROPERTIES ...) splits list values, which would keep only
  # the first label: set labels and timeout from a CTest include file instead,
  # run after the discovered tests are loaded.
  set(_props "${CMAKE_CURRENT_BINARY_DIR}/${name}_properties.cmake")
  file(WRITE "${_props}"
    "if(${name}_TESTS)\n"
    "  set_tests_properties(\${${name}_TESTS} PROPERTIES LABELS \"${T_LABELS}\" TIMEOUT ${T_TIMEOUT})\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${_props}")
endfunction()
