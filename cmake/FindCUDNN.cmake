# FindCUDNN: cuDNN's headers and, when present, its library.
#
# Looked for, in order: the CUDNN_ROOT / CUDNN_PATH variables or environment variables, the CUDA
# toolkit (CUDAToolkit_ROOT, CUDA_PATH, /usr/local/cuda), and the pip wheel layout
# (site-packages/nvidia/cudnn, whose library is libcudnn.so.9 with no unversioned link).
#
# Defines CUDNN_FOUND, CUDNN_VERSION (from cudnn_version.h), CUDNN_INCLUDE_DIRS, CUDNN_LIBRARY
# (may be empty: the shim and the test stub need the headers only), and the imported targets
#   CUDNN::headers  cudnn.h, the CUDA runtime headers it includes, and cuBLAS's (cublasLt.h)
#   CUDNN::cudnn    the real libcudnn (only when CUDNN_LIBRARY was found)

set(_cudnn_hints)
foreach(_var CUDNN_ROOT CUDNN_PATH)
  if(DEFINED ${_var})
    list(APPEND _cudnn_hints "${${_var}}")
  endif()
  if(DEFINED ENV{${_var}})
    list(APPEND _cudnn_hints "$ENV{${_var}}")
  endif()
endforeach()

find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND)
  list(APPEND _cudnn_hints "${CUDAToolkit_LIBRARY_ROOT}" "${CUDAToolkit_TARGET_DIR}")
endif()
if(DEFINED ENV{CUDA_PATH})
  list(APPEND _cudnn_hints "$ENV{CUDA_PATH}")
endif()
list(APPEND _cudnn_hints /usr/local/cuda)

# The pip wheel (nvidia-cudnn-cu12 / -cu13) of whatever python3 is on PATH.
find_program(_cudnn_python NAMES python3 python)
if(_cudnn_python)
  execute_process(
    COMMAND "${_cudnn_python}" -c "import site; print(';'.join(site.getsitepackages()))"
    OUTPUT_VARIABLE _cudnn_site OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  foreach(_dir IN LISTS _cudnn_site)
    if(EXISTS "${_dir}/nvidia/cudnn/include/cudnn.h")
      list(APPEND _cudnn_hints "${_dir}/nvidia/cudnn")
    endif()
    # cuBLAS's wheels (nvidia-cublas: nvidia/cu13 for CUDA 13, nvidia/cublas before).
    foreach(_cublas cu13 cublas)
      if(EXISTS "${_dir}/nvidia/${_cublas}/include/cublasLt.h")
        list(APPEND _cudnn_blas_hints "${_dir}/nvidia/${_cublas}")
      endif()
    endforeach()
  endforeach()
endif()

find_path(CUDNN_INCLUDE_DIR cudnn_version.h
  HINTS ${_cudnn_hints} PATH_SUFFIXES include targets/x86_64-linux/include)
# The library next to the headers first: a machine may hold several cuDNNs (the pip wheel's and a
# system one, say), and headers of one with the library of another is a silent mismatch.
if(CUDNN_INCLUDE_DIR)
  get_filename_component(_cudnn_prefix "${CUDNN_INCLUDE_DIR}" DIRECTORY)
  find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 libcudnn.so.8
    PATHS "${_cudnn_prefix}" PATH_SUFFIXES lib64 lib targets/x86_64-linux/lib NO_DEFAULT_PATH)
endif()
find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 libcudnn.so.8
  HINTS ${_cudnn_hints} PATH_SUFFIXES lib64 lib targets/x86_64-linux/lib)

# cudnn_graph.h includes cuda_runtime_api.h and library_types.h from the CUDA toolkit.
find_path(CUDNN_CUDA_INCLUDE_DIR cuda_runtime_api.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS} ${_cudnn_hints} PATH_SUFFIXES include targets/x86_64-linux/include)
# The shim interposes cuBLASLt and cuBLAS too: their headers, from the toolkit or the pip wheel.
find_path(CUDNN_CUBLAS_INCLUDE_DIR cublasLt.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS} ${_cudnn_hints} ${_cudnn_blas_hints}
  PATH_SUFFIXES include targets/x86_64-linux/include)

if(CUDNN_INCLUDE_DIR)
  file(STRINGS "${CUDNN_INCLUDE_DIR}/cudnn_version.h" _cudnn_defines REGEX "#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ")
  foreach(_part MAJOR MINOR PATCHLEVEL)
    string(REGEX REPLACE ".*#define CUDNN_${_part} ([0-9]+).*" "\\1" CUDNN_VERSION_${_part} "${_cudnn_defines}")
  endforeach()
  set(CUDNN_VERSION "${CUDNN_VERSION_MAJOR}.${CUDNN_VERSION_MINOR}.${CUDNN_VERSION_PATCHLEVEL}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CUDNN
  REQUIRED_VARS CUDNN_INCLUDE_DIR CUDNN_CUDA_INCLUDE_DIR CUDNN_CUBLAS_INCLUDE_DIR
  VERSION_VAR CUDNN_VERSION
  FAIL_MESSAGE "cuDNN headers not found: set CUDNN_ROOT (or CUDNN_PATH) to the folder holding include/cudnn.h")

if(CUDNN_FOUND)
  set(CUDNN_INCLUDE_DIRS "${CUDNN_INCLUDE_DIR}" "${CUDNN_CUDA_INCLUDE_DIR}" "${CUDNN_CUBLAS_INCLUDE_DIR}")
  list(REMOVE_DUPLICATES CUDNN_INCLUDE_DIRS)
  if(NOT TARGET CUDNN::headers)
    add_library(CUDNN::headers INTERFACE IMPORTED)
    set_target_properties(CUDNN::headers PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIRS}")
  endif()
  if(CUDNN_LIBRARY AND NOT TARGET CUDNN::cudnn)
    add_library(CUDNN::cudnn SHARED IMPORTED)
    set_target_properties(CUDNN::cudnn PROPERTIES
      IMPORTED_LOCATION "${CUDNN_LIBRARY}"
      INTERFACE_LINK_LIBRARIES CUDNN::headers)
  endif()
endif()
mark_as_advanced(CUDNN_INCLUDE_DIR CUDNN_CUDA_INCLUDE_DIR CUDNN_CUBLAS_INCLUDE_DIR CUDNN_LIBRARY)
