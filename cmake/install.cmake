# What `cmake --install` puts under the prefix (docs/install.md):
#   include/weir/...                          the public headers
#   lib/libweir_<module>.a                    one static library per module
#   lib/cmake/weir/weirConfig.cmake ...       find_package(weir) -> weir::weir
#   lib/pkgconfig/weir.pc                     pkg-config --cflags --libs weir
#   bin/weir                                  the weir program (WEIR_BUILD_PROGRAMS)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

get_property(weir_modules GLOBAL PROPERTY WEIR_MODULES)
install(TARGETS weir ${weir_modules} EXPORT weirTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/weir DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET weir_cli)
  install(TARGETS weir_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

install(EXPORT weirTargets NAMESPACE weir:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/weir)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/weirConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/weirConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/weir)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/weirConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/weirConfig.cmake ${PROJECT_BINARY_DIR}/weirConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/weir)

# weir.pc: the modules' static libraries from the top of the graph down (a static link
# needs a library before those it uses), then what they use.
set(weir_pc_libs "")
foreach(module api rest runtime window sink connectors savepoint checkpoint operators time state core)
  if(TARGET weir_${module})
    get_target_property(type weir_${module} TYPE)
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      string(APPEND weir_pc_libs " -lweir_${module}")
    endif()
  endif()
endforeach()
file(RELATIVE_PATH weir_pc_up /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${CMAKE_CURRENT_LIST_DIR}/weir.pc.in ${PROJECT_BINARY_DIR}/weir.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/weir.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
