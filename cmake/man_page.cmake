# Writes the man page dblock(1) from the command's own help: help2man over `dblock --help` and
# `--version`, with each command's `dblock COMMAND --help` added as a section of its own, so the
# page and the help never disagree. Run as
#   cmake -DDBLOCK=<dblock> -DHELP2MAN=<help2man> -DOUT=<dblock.1> -P man_page.cmake
set(_commands run elect leader list inspect release migrate reap exporter version)
get_filename_component(_dir "${OUT}" DIRECTORY)
set(_include "${_dir}/dblock.h2m")
file(WRITE "${_include}" "[COMMANDS IN DETAIL]\n")
foreach(_command IN LISTS _commands)
  execute_process(COMMAND "${DBLOCK}" ${_command} --help OUTPUT_VARIABLE _help RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "dblock ${_command} --help exited ${_rc}")
  endif()
  # roff: a leading dot or quote would start a request, a backslash an escape.
  string(REPLACE "\\" "\\e" _help "${_help}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" _help "${_help}")
  file(APPEND "${_include}" ".SS ${_command}\n.nf\n${_help}.fi\n")
endforeach()
execute_process(COMMAND "${HELP2MAN}" --no-info --section 1
                        --name "a distributed lock on the database you already have"
                        --include "${_include}" --output "${OUT}" "${DBLOCK}"
                RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "help2man exited ${_rc}")
endif()
