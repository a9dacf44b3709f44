# Install and export rules (DESIGN.md A5): an installed megasim is found with
# find_package(megasim CONFIG REQUIRED) and linked as megasim::megasim (the one-header user API,
# megasim/megasim.hpp, and the libraries behind it). Layout under the prefix:
#   bin/megasim                         the CLI
#   include/megasim/...                 headers (megasim.hpp is the user API; the rest is internal)
#   lib/libmegasim_*.a                  the module libraries
#   lib/cmake/megasim/                  megasimConfig.cmake, its version file and the targets
#   share/megasim/configs/              the catalogs (GPUs, clusters, models, hardware profiles)
include(CMakePackageConfigHelpers)

get_property(_megasim_libs GLOBAL PROPERTY MEGASIM_LIBRARY_TARGETS)
install(TARGETS ${_megasim_libs} EXPORT megasimTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/megasim DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/megasim/configs)
if(TARGET megasim)
  install(TARGETS megasim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(_megasim_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/megasim)
install(EXPORT megasimTargets NAMESPACE megasim:: DESTINATION ${_megasim_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/megasimConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/megasimConfig.cmake
                              INSTALL_DESTINATION ${_megasim_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/megasimConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/megasimConfig.cmake ${PROJECT_BINARY_DIR}/megasimConfigVersion.cmake
        DESTINATION ${_megasim_cmake_dir})
