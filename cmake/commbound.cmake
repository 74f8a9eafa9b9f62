# Helpers that declare each library and test the same way (sources listed, never globbed).

# Warnings of every target. Structs are filled with designated initializers that name only what
# differs from their default member initializers; GCC 12 warns of each member left to its default
# (-Wmissing-field-initializers), which is the point of them.
set(COMMBOUND_WARNINGS -Wall -Wextra -Wno-missing-field-initializers)
# Tests' own code is compiled at -O1 in optimized builds: their bodies call into the libraries,
# which keep -O2, and GoogleTest's assertion macros took -O2 longer to compile than anything else
# (a test file 27% faster at -O1; CI builds every test twice, plain and sanitized). Not -O0: tests
# that instantiate the trace reader's JSON templates ran 2 s at -O1 and 55 s at -O0.
set(COMMBOUND_TEST_OPTIMIZATION $<$<CONFIG:RelWithDebInfo,Release>:-O1>)

# commbound_library(NAME SOURCES ... DEPS ...)
function(commbound_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  target_compile_options(${name} PRIVATE ${COMMBOUND_WARNINGS} -Wpedantic)
endfunction()

# commbound_test(NAME SOURCES ... DEPS ... LABEL unit|golden|gpu [TIMEOUT seconds] [COST seconds])
# Each TEST() becomes its own ctest case (one process each: SimGrid allows one Engine per process);
# TIMEOUT, if given, bounds each case (tests that start daemons or wait on other programs); five
# times as long in a sanitizer build. COST, if given, is about what its longest case takes: a
# parallel ctest starts the costliest cases first, so on a fresh clone (no timing history yet, as
# in CI) a long case does not start last and run alone. The target tests_LABEL builds every test of
# that label and what they run (`make sanitize SANITIZE_LABELS=unit` builds no more than that).
function(commbound_test name)
  cmake_parse_arguments(ARG "" "LABEL;TIMEOUT;COST" "SOURCES;DEPS" ${ARGN})
  set(cost "")
  if(ARG_COST)
    set(cost COST ${ARG_COST})
  endif()
  set(timeout "")
  if(ARG_TIMEOUT)
    if(COMMBOUND_SANITIZE OR COMMBOUND_FUZZ)
      math(EXPR ARG_TIMEOUT "${ARG_TIMEOUT} * 5")  # sanitized code runs 2-5 times slower
    endif()
    set(timeout TIMEOUT ${ARG_TIMEOUT})
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})  # tests/support/
  target_compile_options(${name} PRIVATE ${COMMBOUND_WARNINGS} ${COMMBOUND_TEST_OPTIMIZATION})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  if(NOT TARGET tests_${ARG_LABEL})
    add_custom_target(tests_${ARG_LABEL})
  endif()
  add_dependencies(tests_${ARG_LABEL} ${name})
  gtest_discover_tests(${name}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    PROPERTIES LABELS ${ARG_LABEL} ${timeout} ${cost}
    DISCOVERY_TIMEOUT 60)
endfunction()

include(GoogleTest)

# commbound_fuzz_target(NAME SOURCES ... DEPS ... CORPUS dir)
# A libFuzzer target (COMMBOUND_FUZZ builds only): the executable build/fuzz/NAME, and a ctest
# NAME.seeds (label fuzz) that runs it once over every input of its seed corpus, the regression
# inputs kept there included. `make fuzz` mutates from the corpus for a set time.
function(commbound_fuzz_target name)
  cmake_parse_arguments(ARG "" "CORPUS" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE ${COMMBOUND_WARNINGS})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
  add_dependencies(fuzz_targets ${name})
  add_test(NAME ${name}.seeds COMMAND ${name} -runs=0 ${ARG_CORPUS})
  set_tests_properties(${name}.seeds PROPERTIES LABELS fuzz)
endfunction()
