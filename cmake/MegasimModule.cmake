# Shared compile settings for every megasim target.
function(megasim_target_settings target)
  target_compile_features(${target} PRIVATE cxx_std_20)
  set_target_properties(${target} PROPERTIES CXX_EXTENSIONS OFF)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wconversion -Wshadow
                                           -Wnon-virtual-dtor -Wold-style-cast)
  if(MEGASIM_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(MEGASIM_SANITIZE)
    # The sanitizer build exists to run the tests. -O1 (what ASan's documentation recommends) and
    # -g1 (file:line in sanitizer stack traces, no variable info) after the build type's -O2 -g
    # halve its compile time: measured per translation unit in docs/ENGINEERING.md. A Debug
    # build keeps its -O0 -g for the debugger.
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer
                                             -fno-sanitize-recover=undefined $<$<NOT:$<CONFIG:Debug>>:-O1>
                                             $<$<NOT:$<CONFIG:Debug>>:-g1>)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()

# megasim_module(NAME SOURCES a.cpp b.cpp DEPS megasim_core ... [PRIVATE_DEPS spdlog::spdlog ...])
# Creates the static library megasim_NAME (alias megasim::NAME, installed and exported under
# that name) with public headers under include/. DEPS are what its public headers need;
# PRIVATE_DEPS only its sources (a static library still names them for the final link).
function(megasim_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(megasim_${name} STATIC ${ARG_SOURCES})
  add_library(megasim::${name} ALIAS megasim_${name})
  set_target_properties(megasim_${name} PROPERTIES EXPORT_NAME ${name})
  target_compile_features(megasim_${name} PUBLIC cxx_std_20)
  target_include_directories(megasim_${name}
    PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(megasim_${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  megasim_target_settings(megasim_${name})
  set_property(GLOBAL APPEND PROPERTY MEGASIM_LIBRARY_TARGETS megasim_${name})
endfunction()

# megasim_test(NAME SOURCES t1.cpp ... DEPS megasim_x ... [TIER unit|golden|calibration])
# One GoogleTest executable per module or tier; each TEST is a ctest case labelled with its
# tier (default unit). In the unit tier, a TEST whose name contains "Textbook" (expected numbers
# derived by hand in the comment above it) is labelled unit-textbook: ctest's -L is a regular
# expression, so -L unit runs it with the rest of the tier and -L textbook selects it. (One
# label: gtest_discover_tests flattens a list of labels into separate properties.)
function(megasim_test name)
  cmake_parse_arguments(ARG "" "TIER" "SOURCES;DEPS" ${ARGN})
  if(NOT ARG_TIER)
    set(ARG_TIER unit)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests
                                             ${PROJECT_SOURCE_DIR}/tests/unit)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    MEGASIM_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    MEGASIM_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared")
  megasim_target_settings(${name})
  if(ARG_TIER STREQUAL "unit")
    gtest_discover_tests(${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} DISCOVERY_TIMEOUT 60
                         TEST_FILTER "*Textbook*" PROPERTIES LABELS unit-textbook)
    gtest_discover_tests(${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} DISCOVERY_TIMEOUT 60
                         TEST_FILTER "-*Textbook*" PROPERTIES LABELS unit)
  else()
    gtest_discover_tests(${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} DISCOVERY_TIMEOUT 60
                         PROPERTIES LABELS ${ARG_TIER})
  endif()
endfunction()
