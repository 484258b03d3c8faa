# CUDNN_FASTPATH_SANITIZE applies to every target of the project, so that the shim, the test stub
# and the programs they are loaded into share one sanitizer runtime.
if(CUDNN_FASTPATH_SANITIZE)
  set(_cfp_san_flags -fsanitize=${CUDNN_FASTPATH_SANITIZE} -fno-omit-frame-pointer -g)
  if(CUDNN_FASTPATH_SANITIZE MATCHES "undefined")
    list(APPEND _cfp_san_flags -fno-sanitize-recover=undefined)
  endif()
  add_compile_options(${_cfp_san_flags})
  add_link_options(-fsanitize=${CUDNN_FASTPATH_SANITIZE})
endif()
if(CUDNN_FASTPATH_SANITIZE)
  add_compile_definitions(CUDNN_FASTPATH_SANITIZED)
endif()
