# Shared compile settings for every megasim target.
function(megasim_target_settings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wconversion -Wshadow
                                           -Wnon-virtual-dtor -Wold-style-cast)
  if(MEGASIM_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(MEGASIM_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer
                                             -fno-sanitize-recover=undefined)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()

# megasim_module(NAME SOURCES a.cpp b.cpp DEPS megasim_core ...)
# Creates the static library megasim_NAME with public headers under include/.
function(megasim_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(megasim_${name} STATIC ${ARG_SOURCES})
  target_include_directories(megasim_${name}
    PUBLIC ${PROJECT_SOURCE_DIR}/include
    PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(megasim_${name} PUBLIC ${ARG_DEPS})
  megasim_target_settings(megasim_${name})
endfunction()

# megasim_test(NAME SOURCES t1.cpp ... DEPS megasim_x ...)
# One GoogleTest executable per module; each TEST is a ctest case.
function(megasim_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    MEGASIM_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    MEGASIM_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared")
  megasim_target_settings(${name})
  gtest_discover_tests(${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} DISCOVERY_TIMEOUT 60)
endfunction()
