# Helpers that declare each library and test the same way (sources listed, never globbed).

# commbound_library(NAME SOURCES ... DEPS ...)
function(commbound_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  target_compile_options(${name} PRIVATE -Wall -Wextra -Wpedantic)
endfunction()

# commbound_test(NAME SOURCES ... DEPS ... LABEL unit|golden|gpu [TIMEOUT seconds])
# Each TEST() becomes its own ctest case (one process each: SimGrid allows one Engine per process);
# TIMEOUT, if given, bounds each case (tests that start daemons or wait on other programs).
function(commbound_test name)
  cmake_parse_arguments(ARG "" "LABEL;TIMEOUT" "SOURCES;DEPS" ${ARGN})
  set(timeout "")
  if(ARG_TIMEOUT)
    set(timeout TIMEOUT ${ARG_TIMEOUT})
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})  # tests/support/
  target_compile_options(${name} PRIVATE -Wall -Wextra)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  gtest_discover_tests(${name}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    PROPERTIES LABELS ${ARG_LABEL} ${timeout}
    DISCOVERY_TIMEOUT 60)
endfunction()

include(GoogleTest)
