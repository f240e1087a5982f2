# Build speed: a faster linker and precompiled headers, applied to the whole
# tree from one place so the per-directory CMakeLists.txt files stay as they
# are (scripts/test.sh builds two g++ flavours and a clang one on two cores).
#
# Guarantees: nothing here changes what a program does. The linker is chosen
# among the ones the toolchain accepts (lld, then gold, then the default);
# precompiled headers hold third-party and standard headers only, so a
# project header edit never rebuilds them, and every source still includes
# what it uses (a build with -DKAIROS_PCH=OFF shows one that does not).
#
#   kairos_select_linker()   before any target: adds -fuse-ld=... globally.
#   kairos_speed_up_build()  after every add_subdirectory(): gives each test
#                            executable (a target linking GTest::gtest) its
#                            -O level (KAIROS_TEST_OPT_FLAGS) and a shared
#                            precompiled header, and the Beast/Asio sources of
#                            kairos_prod one of their own.

option(KAIROS_PCH "Precompile the third-party headers of the tests and of prod/" ON)
# Test executables are mostly large straight-line test bodies that run once:
# the optimizer spends most of their compile time and buys them little run
# time. The libraries they test keep the flavour's level.
set(KAIROS_TEST_OPT_FLAGS "" CACHE STRING
    "Extra compile flags (an -O level) for the test executables' own sources")
set(KAIROS_LINKER "auto" CACHE STRING "Linker for -fuse-ld= (auto: lld, else gold, else the default)")

include(CheckLinkerFlag)

function(kairos_select_linker)
  set(candidates ${KAIROS_LINKER})
  if(KAIROS_LINKER STREQUAL "auto")
    set(candidates lld gold)
  elseif(KAIROS_LINKER STREQUAL "default")
    return()
  endif()
  foreach(ld ${candidates})
    string(MAKE_C_IDENTIFIER "KAIROS_HAVE_LD_${ld}" var)
    check_linker_flag(CXX "-fuse-ld=${ld}" ${var})
    if(${var})
      message(STATUS "Kairos: linking with -fuse-ld=${ld}")
      add_link_options(-fuse-ld=${ld})
      return()
    endif()
  endforeach()
  message(STATUS "Kairos: linking with the compiler's default linker")
endfunction()

# Every buildsystem target defined in `dir` and below.
function(_kairos_targets_below dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    _kairos_targets_below(${sub} below)
    list(APPEND targets ${below})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# True when `target` links `lib`, directly or through a library of the tree.
function(_kairos_links target lib out)
  set(${out} FALSE PARENT_SCOPE)
  get_target_property(libs ${target} LINK_LIBRARIES)
  if(NOT libs)
    return()
  endif()
  foreach(l ${libs})
    if(l STREQUAL lib)
      set(${out} TRUE PARENT_SCOPE)
      return()
    endif()
    if(TARGET ${l})
      get_target_property(imported ${l} IMPORTED)
      get_target_property(type ${l} TYPE)
      if(NOT imported AND NOT type STREQUAL "INTERFACE_LIBRARY")
        _kairos_links(${l} ${lib} found)
        if(found)
          set(${out} TRUE PARENT_SCOPE)
          return()
        endif()
      endif()
    endif()
  endforeach()
endfunction()

# The headers every test translation unit gets precompiled.
set(_KAIROS_TEST_PCH_HEADERS
  <gtest/gtest.h> <rapidcheck.h> <rapidcheck/gtest.h>
  <algorithm> <chrono> <cstdint> <functional> <map> <memory> <optional> <set>
  <string> <string_view> <utility> <vector>
  <absl/status/status.h> <absl/status/statusor.h> <absl/strings/str_cat.h>
  <absl/time/time.h>)
# Added for the sources and tests that use Boost (everything linking kairos_prod).
set(_KAIROS_BOOST_PCH_HEADERS
  <boost/asio/io_context.hpp> <boost/asio/executor_work_guard.hpp>
  <boost/asio/ip/tcp.hpp> <boost/asio/steady_timer.hpp> <boost/asio/ssl.hpp>
  <boost/beast/core.hpp> <boost/beast/http.hpp> <boost/json.hpp>)

# Sets `out` to the sources of `target` that include Boost.Asio or Beast and
# marks the others to skip the target's precompiled header.
function(_kairos_boost_sources target out)
  get_target_property(sources ${target} SOURCES)
  get_target_property(dir ${target} SOURCE_DIR)
  set(heavy "")
  foreach(src ${sources})
    cmake_path(ABSOLUTE_PATH src BASE_DIRECTORY ${dir} OUTPUT_VARIABLE path)
    # Generated sources (the dashboard's embedded assets) do not exist yet
    # at configure time and never include Boost.
    if(NOT EXISTS ${path})
      set_source_files_properties(${src} TARGET_DIRECTORY ${target} PROPERTIES
                                  SKIP_PRECOMPILE_HEADERS ON)
      continue()
    endif()
    file(READ ${path} text LIMIT 8192)
    if(text MATCHES "#include <boost/(asio|beast)")
      list(APPEND heavy ${src})
    else()
      set_source_files_properties(${src} TARGET_DIRECTORY ${target} PROPERTIES
                                  SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
  set(${out} ${heavy} PARENT_SCOPE)
endfunction()

function(kairos_speed_up_build)
  _kairos_targets_below(${CMAKE_SOURCE_DIR} targets)
  set(tests "")
  if(KAIROS_TESTS)
    foreach(t ${targets})
      get_target_property(type ${t} TYPE)
      if(type STREQUAL "EXECUTABLE")
        _kairos_links(${t} GTest::gtest uses_gtest)
        if(uses_gtest)
          list(APPEND tests ${t})
          if(KAIROS_TEST_OPT_FLAGS)
            target_compile_options(${t} PRIVATE ${KAIROS_TEST_OPT_FLAGS})
          endif()
        endif()
      endif()
    endforeach()
  endif()
  if(NOT KAIROS_PCH)
    return()
  endif()
  if(TARGET kairos_prod)
    # Imported targets are seen only where found: find them here too.
    find_package(Boost 1.81 REQUIRED COMPONENTS json)
  endif()

  # kairos_prod: only its Boost-heavy sources share one header; the rest,
  # which never include Boost, would pay to load it for nothing.
  if(TARGET kairos_prod)
    _kairos_boost_sources(kairos_prod heavy)
    if(heavy)
      target_precompile_headers(kairos_prod PRIVATE ${_KAIROS_BOOST_PCH_HEADERS})
    endif()
  endif()

  # Tests: one precompiled header per group of equal compile flags (the
  # tests' -O level included), built by a small library of its own and
  # reused by every test executable of the group. Macros a test defines for
  # itself (paths of binaries) never appear in these headers, so the compiler
  # accepts the shared header (-Winvalid-pch, an error here, would say).
  if(NOT KAIROS_TESTS)
    return()
  endif()
  find_package(GTest REQUIRED)
  find_package(rapidcheck REQUIRED)
  find_package(OpenSSL REQUIRED)
  # The headers' own targets (not kairos_core / kairos_prod: a header built
  # from those would wait for the libraries to be built first).
  set(_KAIROS_PCH_LIBS GTest::gtest rapidcheck absl::status absl::statusor absl::strings
      absl::time)
  file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/kairos_pch.cc
       CONTENT "// Builds the tests' precompiled headers.\n")
  set(core_pch "")
  set(prod_pch "")
  foreach(t ${tests})
    _kairos_links(${t} kairos_prod uses_prod)
    if(uses_prod)
      if(NOT prod_pch)
        set(prod_pch kairos_pch_prod_tests)
        add_library(${prod_pch} STATIC ${CMAKE_BINARY_DIR}/kairos_pch.cc)
        # kairos_prod's compile flags, without waiting for it to be built.
        target_link_libraries(${prod_pch} PRIVATE ${_KAIROS_PCH_LIBS} Boost::headers
                              Boost::json OpenSSL::SSL)
        target_compile_definitions(${prod_pch} PRIVATE
          $<TARGET_PROPERTY:kairos_prod,INTERFACE_COMPILE_DEFINITIONS>)
        target_compile_options(${prod_pch} PRIVATE ${KAIROS_TEST_OPT_FLAGS})
        target_precompile_headers(${prod_pch} PRIVATE ${_KAIROS_TEST_PCH_HEADERS}
                                  ${_KAIROS_BOOST_PCH_HEADERS})
      endif()
      target_precompile_headers(${t} REUSE_FROM ${prod_pch})
    else()
      if(NOT core_pch)
        set(core_pch kairos_pch_core_tests)
        add_library(${core_pch} STATIC ${CMAKE_BINARY_DIR}/kairos_pch.cc)
        target_link_libraries(${core_pch} PRIVATE ${_KAIROS_PCH_LIBS})
        target_compile_options(${core_pch} PRIVATE ${KAIROS_TEST_OPT_FLAGS})
        target_precompile_headers(${core_pch} PRIVATE ${_KAIROS_TEST_PCH_HEADERS})
      endif()
      target_precompile_headers(${t} REUSE_FROM ${core_pch})
    endif()
  endforeach()
endfunction()
