# The Python package's extension, convtune._convtune (python/, docs/PYTHON.md): the runtime library behind
# nanobind. Built when scikit-build-core drives the build (`pip install .`, which builds only this target)
# or with -DCONVTUNE_PYTHON=ON (then build/python/convtune/, for tests from the tree); the normal build
# and CI leave it out.
find_package(Python 3.9 REQUIRED COMPONENTS Interpreter Development.Module)
execute_process(COMMAND ${Python_EXECUTABLE} -m nanobind --cmake_dir OUTPUT_VARIABLE _nanobind_dir
                OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _nanobind_rc ERROR_QUIET)
if(NOT _nanobind_rc EQUAL 0)
  message(FATAL_ERROR "The Python extension needs nanobind for ${Python_EXECUTABLE}: pip install nanobind")
endif()
find_package(nanobind CONFIG REQUIRED HINTS ${_nanobind_dir})

nanobind_add_module(_convtune NB_STATIC python/src/convtune_ext.cpp)
target_link_libraries(_convtune PRIVATE convtune::runtime)
# The CUDA, cuDNN and XGBoost libraries where the build found them (an installed module keeps no build rpath).
set_target_properties(_convtune PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
if(MUPARSER_LIBRARY)  # linked by full path (e.g. .deps/muparser, unpacked where apt could not install it)
  get_filename_component(_muparser_dir ${MUPARSER_LIBRARY} DIRECTORY)
  set_property(TARGET _convtune APPEND PROPERTY INSTALL_RPATH ${_muparser_dir})
endif()

if(SKBUILD)
  install(TARGETS _convtune LIBRARY DESTINATION convtune)
  # The shipped fleet table, the package's default (convtune.use_table changes it).
  install(FILES ${CMAKE_SOURCE_DIR}/results/fleet-h100-h200/dispatch.json DESTINATION convtune/tables
          RENAME fleet-h100-h200.json)
else()
  set_target_properties(_convtune PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/python/convtune)
endif()
