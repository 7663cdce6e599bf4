# A CTest test (CMakeLists.txt, ctest_names_are_readable): every test name in the build is the
# test's own, never GoogleTest's printout of a parameter. gtest_discover_tests keeps the
# "# GetParam() = ..." comment of a named parameterised test in its CTest name, and a parameter
# with no printer prints as raw bytes ("56-byte object <67-C2 ...>") that change between builds.
# Usage: cmake -DCTEST=<ctest> -DBUILD=<build dir> -P ctest_names.cmake
execute_process(COMMAND ${CTEST} -N --test-dir ${BUILD} OUTPUT_VARIABLE listing RESULT_VARIABLE code)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "ctest -N failed in ${BUILD} (exit ${code})")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(bad "")
foreach(line IN LISTS lines)
  if(line MATCHES "Test +#[0-9]+: " AND (line MATCHES "-byte object" OR line MATCHES "GetParam"))
    string(APPEND bad "\n  ${line}")
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "test names carry a parameter's printout; give the suite a name generator "
                      "(INSTANTIATE_TEST_SUITE_P's 4th argument) and a PrintTo for its parameter:${bad}")
endif()
string(REGEX MATCH "Total Tests: [0-9]+" total "${listing}")
message(STATUS "every name readable (${total})")
