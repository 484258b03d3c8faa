# Installs the build into a scratch prefix, then configures, builds and runs the project in
# consumer/ against it, the way another project would use the package. Run by ctest with -P.
foreach(var BUILD_DIR WORK_DIR CONSUMER_SOURCE GENERATOR EXPECT_FRONTEND)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "consumer_test.cmake needs -D ${var}=...")
  endif()
endforeach()

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${what} failed (${status}):\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
step("cmake --install" "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix")
step("configuring the consumer" "${CMAKE_COMMAND}" -S "${CONSUMER_SOURCE}" -B "${WORK_DIR}/build" -G "${GENERATOR}"
  "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix" "-DEXPECT_FRONTEND=${EXPECT_FRONTEND}")
step("building the consumer" "${CMAKE_COMMAND}" --build "${WORK_DIR}/build")
# The consumer is built plainly; in a sanitizer build of this project the libraries it loads are
# instrumented, and the runtime they bring must be let start second.
step("running the consumer" "${CMAKE_COMMAND}" -E env "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0"
  "${WORK_DIR}/build/consumer")
if(NOT step_output MATCHES "consumer: ok")
  message(FATAL_ERROR "the consumer printed:\n${step_output}")
endif()
message(STATUS "${step_output}")
