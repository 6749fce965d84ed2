# pvmmu_add_gtest(NAME LABELS l1 [l2...] SOURCES s1 [s2...] [LIBS ...])
# One GoogleTest executable whose tests are registered one by one with CTest,
# every one carrying the labels (unit, concurrency, guest, ...).
include(GoogleTest)
find_package(GTest REQUIRED)

function(pvmmu_add_gtest name)
  cmake_parse_arguments(T "" "TIMEOUT" "LABELS;SOURCES;LIBS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_executable(${name} ${T_SOURCES})
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
