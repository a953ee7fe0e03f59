# dblock_add_conformance_test(<name> SOURCES <sources...> [LIBRARIES <libraries...>])
#
# For a lock service written outside dblock's tree: an executable <name> made of dblock's
# conformance suite (installed with the kit) and the service's context from SOURCES, which
# defines dblock::testing::context() (conformance/context.h: the service's URL and what it
# declares); LIBRARIES holds the service. A ctest test <name> runs it: every case of the suite that
# applies to what the service declares (the others are named and left out) must pass, and the run
# fails at once when the service reports other capabilities than its context pins.
#
# Needs Catch2 2 (Debian: catch2) and OpenSSL's libcrypto (libssl-dev).
function(dblock_add_conformance_test name)
  cmake_parse_arguments(C "" "" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT C_SOURCES)
    message(FATAL_ERROR "dblock_add_conformance_test(${name}): SOURCES must define dblock::testing::context()")
  endif()
  find_package(Catch2 2 REQUIRED)
  find_package(OpenSSL REQUIRED COMPONENTS Crypto)
  find_package(Threads REQUIRED)
  set(dir "${DBLOCK_CONFORMANCE_DIR}")
  # The relay the stalled-connection cases put between a service and its server ([needs:tcp]).
  if(NOT TARGET dblock_conformance_tcp_relay)
    add_executable(dblock_conformance_tcp_relay "${dir}/support/tcp_relay.cc")
    target_compile_features(dblock_conformance_tcp_relay PRIVATE cxx_std_20)
  endif()
  set(suite conformance observation recipes row_lock_queue scheduled semaphores server_clock
            stalled_connections test_main)
  list(TRANSFORM suite PREPEND "${dir}/conformance/")
  list(TRANSFORM suite APPEND ".cc")
  add_executable(${name} ${C_SOURCES} ${suite} "${dir}/support/environment.cc" "${dir}/support/process.cc"
                         "${dir}/support/relay.cc")
  target_compile_features(${name} PRIVATE cxx_std_20)
  target_include_directories(${name} PRIVATE "${dir}/conformance" "${dir}/support")
  target_link_libraries(${name} PRIVATE ${C_LIBRARIES} dblock::core Catch2::Catch2 OpenSSL::Crypto Threads::Threads)
  target_compile_definitions(${name} PRIVATE DBLOCK_TCP_RELAY="$<TARGET_FILE:dblock_conformance_tcp_relay>")
  add_dependencies(${name} dblock_conformance_tcp_relay)
  add_test(NAME ${name} COMMAND ${name})
endfunction()
