# parser_fuzzer: the .dfz parser and printer under libFuzzer (include from
# fuzz/CMakeLists.txt). The graph sources are compiled into the target itself,
# not linked from divfuzz_graph, so they are instrumented and sanitized.
#   clang:   -fsanitize=fuzzer, plus ASan and UBSan unless
#            DIVFUZZ_SANITIZE_PARSER_FUZZER is OFF
#   archive: g++ with ${DIVFUZZ_LIBFUZZER_ARCHIVE}; the harness's extra
#            counters are the only coverage signal
if(DIVFUZZ_FUZZER_MODE STREQUAL "clang" OR DIVFUZZ_FUZZER_MODE STREQUAL "archive")
  add_executable(parser_fuzzer ${CMAKE_CURRENT_LIST_DIR}/parser_fuzzer.cc ${DIVFUZZ_GRAPH_SOURCES})
  target_include_directories(parser_fuzzer PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../..)
  target_link_libraries(parser_fuzzer PRIVATE ${DIVFUZZ_GRAPH_LIBS})
  if(DIVFUZZ_FUZZER_MODE STREQUAL "clang")
    if(DIVFUZZ_SANITIZE_PARSER_FUZZER)
      set(_parser_fuzzer_flags -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
    else()
      set(_parser_fuzzer_flags -fsanitize=fuzzer)
    endif()
    target_compile_options(parser_fuzzer PRIVATE ${_parser_fuzzer_flags})
    target_link_options(parser_fuzzer PRIVATE ${_parser_fuzzer_flags})
  else()
    target_link_libraries(parser_fuzzer PRIVATE ${DIVFUZZ_LIBFUZZER_ARCHIVE} Threads::Threads)
  endif()
endif()
