# The dispatch runtime for applications (docs/DISPATCH.md) and the exported-header test program.

# One static library: the runtime's entry points plus every object of the core. Variants register
# themselves from static initializers that nothing references, so a plain static link drops them:
# consumers link it whole, through convtune::runtime below (or $<LINK_LIBRARY:WHOLE_ARCHIVE,...>).
add_library(convtune_runtime STATIC runtime/convtune_runtime.cpp $<TARGET_OBJECTS:convtune_core>)
target_include_directories(convtune_runtime PUBLIC $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/runtime>
                           PRIVATE $<TARGET_PROPERTY:convtune_core,INTERFACE_INCLUDE_DIRECTORIES>)
target_compile_definitions(convtune_runtime PRIVATE $<TARGET_PROPERTY:convtune_core,INTERFACE_COMPILE_DEFINITIONS>)
# cudart is public (the header uses cudaStream_t); the rest are link-only for consumers.
target_link_libraries(convtune_runtime PUBLIC CUDA::cudart
                      PRIVATE CUDA::nvrtc CUDA::cufft CUDA::cublas ${CUDNN_LIBRARY} nlohmann_json::nlohmann_json)
if(XGBOOST_INCLUDE_DIR AND XGBOOST_LIBRARY)  # the core's export fits models (the runtime only reads them)
  target_link_libraries(convtune_runtime PUBLIC ${XGBOOST_LIBRARY})
endif()
if(MUPARSER_INCLUDE_DIR AND MUPARSER_LIBRARY)  # the core's objects evaluate the plug-ins a table carries
  target_link_libraries(convtune_runtime PUBLIC ${MUPARSER_LIBRARY})
endif()
if(ZLIB_FOUND)  # the core's objects read packed run folders
  target_link_libraries(convtune_runtime PRIVATE ZLIB::ZLIB)
endif()
set_target_properties(convtune_runtime PROPERTIES POSITION_INDEPENDENT_CODE ON)

# What applications link: the archive whole (--whole-archive), so that every variant is registered.
add_library(convtune_runtime_whole INTERFACE)
target_link_libraries(convtune_runtime_whole INTERFACE "$<LINK_LIBRARY:WHOLE_ARCHIVE,convtune_runtime>")
add_library(convtune::runtime ALIAS convtune_runtime_whole)

# dispatch.json -> convtune_dispatch.h, as `convtune export` writes it (used to build export_app).
add_executable(convtune_export_header tests/export_app/export_header.cpp)
target_link_libraries(convtune_export_header PRIVATE convtune_core)

set(EXPORT_APP_FIXTURE ${CMAKE_SOURCE_DIR}/tests/export_app/fixture_dispatch.json)
set(EXPORT_APP_GENERATED ${CMAKE_BINARY_DIR}/generated/export_app)
add_custom_command(OUTPUT ${EXPORT_APP_GENERATED}/convtune_dispatch.h
                   COMMAND ${CMAKE_COMMAND} -E make_directory ${EXPORT_APP_GENERATED}
                   COMMAND convtune_export_header ${EXPORT_APP_FIXTURE} ${EXPORT_APP_GENERATED}/convtune_dispatch.h
                   DEPENDS convtune_export_header ${EXPORT_APP_FIXTURE}
                   COMMENT "Generating convtune_dispatch.h from the export_app fixture")

# An application's view: the generated header and runtime/ only (no harness include path).
add_executable(export_app tests/export_app/export_app.cpp ${EXPORT_APP_GENERATED}/convtune_dispatch.h)
target_include_directories(export_app PRIVATE ${EXPORT_APP_GENERATED})
target_compile_options(export_app PRIVATE -Wall -Wextra)
target_link_libraries(export_app PRIVATE convtune::runtime)
# Each variant registers itself with one CONVTUNE_REGISTER_VARIANT line in its source: export_app expects
# exactly that many from the runtime library, so that one variant's object file left out of the link shows.
file(GLOB_RECURSE VARIANT_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/variants/*.cpp ${CMAKE_SOURCE_DIR}/variants/*.cu)
set(REGISTERED_VARIANTS 0)
foreach(source ${VARIANT_SOURCES})
  file(STRINGS ${source} registrations REGEX "^CONVTUNE_REGISTER_VARIANT\\(")
  list(LENGTH registrations count)
  math(EXPR REGISTERED_VARIANTS "${REGISTERED_VARIANTS} + ${count}")
endforeach()
target_compile_definitions(export_app PRIVATE CONVTUNE_REGISTERED_VARIANTS=${REGISTERED_VARIANTS})

enable_testing()
# Lookup only without a GPU; with one it also runs the runtime and checks it against a CPU loop.
add_test(NAME export_app COMMAND export_app ${EXPORT_APP_FIXTURE})
set_tests_properties(export_app PROPERTIES LABELS cpu)

# An application's use of the runtime: this GPU's table, one conv2d run checked and timed (examples/).
add_executable(conv2d_app examples/conv2d_app.cpp)
target_compile_options(conv2d_app PRIVATE -Wall -Wextra)
target_link_libraries(conv2d_app PRIVATE convtune::runtime)

# The runtime running a plug-in candidate a table names (scripts/gpu_plugins.sh); the harness only for its reference.
add_executable(plugin_runtime_app tests/plugin_app/plugin_runtime_app.cpp)
target_include_directories(plugin_runtime_app PRIVATE ${CMAKE_SOURCE_DIR} $<TARGET_PROPERTY:convtune_core,INTERFACE_INCLUDE_DIRECTORIES>)
target_link_libraries(plugin_runtime_app PRIVATE convtune::runtime nlohmann_json::nlohmann_json)
