# The linters (label lint; tools/lint.sh says what each runs): shellcheck on the
# shell scripts, pyflakes on the Python, clang-tidy (.clang-tidy) on the hypervisor
# and the core. A missing tool is a SKIP (77) naming it.
foreach(_lint shell python)
  add_test(NAME lint_${_lint} COMMAND ${PROJECT_SOURCE_DIR}/tools/lint.sh ${_lint})
  set_tests_properties(lint_${_lint} PROPERTIES LABELS lint TIMEOUT 120 SKIP_RETURN_CODE 77)
endforeach()
add_test(NAME lint_clang_tidy COMMAND ${PROJECT_SOURCE_DIR}/tools/lint.sh tidy ${PROJECT_BINARY_DIR})
# COST: CTest starts the costliest tests first where it has no timings of its
# own yet (a clean clone, as CI): clang-tidy goes through 74 files one after
# the other, and started last it would end the run alone on one core.
set_tests_properties(lint_clang_tidy PROPERTIES LABELS lint TIMEOUT 900 SKIP_RETURN_CODE 77 COST 300)
