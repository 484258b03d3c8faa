# cmake --install: the shim in lib/, the launcher in bin/ and, when the frontend is built, its
# headers in include/ and a CMake package, so that another project can
#   find_package(cudnn_fastpath)  and link  cudnn_fastpath::frontend.
# The package also says where the shim and the launcher are (cudnn_fastpath_SHIM, _LAUNCHER).
include(CMakePackageConfigHelpers)

set(CUDNN_FASTPATH_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/cudnn_fastpath" CACHE STRING
    "Where the CMake package files are installed, relative to the prefix")

# The shim is preloaded, never linked against: a plain library file, in no export set. Its one
# header declares the run-time switch a program may look up (cudnn_fastpath/shim_control.h).
install(TARGETS cudnn_fastpath_shim LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}")
install(FILES "${PROJECT_SOURCE_DIR}/shim/include/cudnn_fastpath/shim_control.h"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/cudnn_fastpath")
# The launcher copy that looks for the shim in the library folder relative to its own bin/ (see
# scripts/CMakeLists.txt), so the installed tree can be moved as a whole.
install(PROGRAMS "${PROJECT_BINARY_DIR}/scripts/install/cudnn-fastpath" DESTINATION "${CMAKE_INSTALL_BINDIR}")

get_target_property(_cfp_shim_name cudnn_fastpath_shim OUTPUT_NAME)
set(CUDNN_FASTPATH_SHIM_INSTALL_PATH
    "${CMAKE_INSTALL_LIBDIR}/${CMAKE_SHARED_LIBRARY_PREFIX}${_cfp_shim_name}${CMAKE_SHARED_LIBRARY_SUFFIX}")
set(CUDNN_FASTPATH_LAUNCHER_INSTALL_PATH "${CMAKE_INSTALL_BINDIR}/cudnn-fastpath")
set(CUDNN_FASTPATH_INCLUDE_INSTALL_DIR "${CMAKE_INSTALL_INCLUDEDIR}")

set(CUDNN_FASTPATH_PACKAGE_HAS_FRONTEND OFF)
if(TARGET cudnn_fastpath_frontend)
  set(CUDNN_FASTPATH_PACKAGE_HAS_FRONTEND ON)
  set_target_properties(cudnn_fastpath_frontend PROPERTIES EXPORT_NAME frontend)

  # A project target in the frontend's link interface (the header-only stream table, should the
  # frontend become a static library) must be in the same export set, or install(EXPORT) refuses
  # to write the package. A shared frontend's private links stay out of it.
  get_target_property(_cfp_interface_links cudnn_fastpath_frontend INTERFACE_LINK_LIBRARIES)
  set(_cfp_exported cudnn_fastpath_frontend)
  if(TARGET cudnn_fastpath_table AND "${_cfp_interface_links}" MATCHES "cudnn_fastpath_table")
    set_target_properties(cudnn_fastpath_table PROPERTIES EXPORT_NAME table)
    list(APPEND _cfp_exported cudnn_fastpath_table)
  endif()

  install(TARGETS ${_cfp_exported} EXPORT cudnn_fastpathTargets
    ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
    LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
    RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
    INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/frontend/include/" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
    FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")
  install(EXPORT cudnn_fastpathTargets NAMESPACE cudnn_fastpath::
    DESTINATION "${CUDNN_FASTPATH_INSTALL_CMAKEDIR}")
endif()

configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/cudnn_fastpathConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/cmake/cudnn_fastpathConfig.cmake"
  INSTALL_DESTINATION "${CUDNN_FASTPATH_INSTALL_CMAKEDIR}"
  PATH_VARS CUDNN_FASTPATH_SHIM_INSTALL_PATH CUDNN_FASTPATH_LAUNCHER_INSTALL_PATH CUDNN_FASTPATH_INCLUDE_INSTALL_DIR)
# 0.x: a new minor version may break the API, so only the same minor version is compatible.
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/cmake/cudnn_fastpathConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}" COMPATIBILITY SameMinorVersion)
# FindCUDNN goes with the package: the frontend's CUDNN::cudnn is found again where it is used.
install(FILES
  "${PROJECT_BINARY_DIR}/cmake/cudnn_fastpathConfig.cmake"
  "${PROJECT_BINARY_DIR}/cmake/cudnn_fastpathConfigVersion.cmake"
  "${PROJECT_SOURCE_DIR}/cmake/FindCUDNN.cmake"
  DESTINATION "${CUDNN_FASTPATH_INSTALL_CMAKEDIR}")
