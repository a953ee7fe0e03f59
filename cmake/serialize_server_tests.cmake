# dblock_serialize_server_tests(): ctest runs tests in parallel (scripts/test.sh passes -j), but
# tests sharing one throwaway server must not overlap: their lock names, tables and the server's
# own restarts would meet. Called at the end of a directory's CMakeLists.txt, it gives every test
# of that directory that requires a server fixture a resource lock named after the fixture, so
# that suites on different servers (and tests with no server) run side by side while those on one
# server run one at a time.
function(dblock_serialize_server_tests)
  get_property(_tests DIRECTORY PROPERTY TESTS)
  foreach(_test IN LISTS _tests)
    get_test_property(${_test} FIXTURES_REQUIRED _fixtures)
    if(_fixtures)
      set_property(TEST ${_test} APPEND PROPERTY RESOURCE_LOCK ${_fixtures})
    endif()
  endforeach()
endfunction()
