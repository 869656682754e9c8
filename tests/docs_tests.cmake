# Documents checked against their sources (included from tests/CMakeLists.txt).
# docs/ORACLE.md's rule table is generated from oracles/rules.def by
# scripts/gen_oracle_rules_md.py; --check fails when they differ.
find_program(DIVFUZZ_DOCS_PYTHON3 NAMES python3 REQUIRED)
add_test(NAME docs_oracle_rules
         COMMAND ${DIVFUZZ_DOCS_PYTHON3} ${CMAKE_SOURCE_DIR}/scripts/gen_oracle_rules_md.py --check
                 --rules ${CMAKE_SOURCE_DIR}/oracles/rules.def --doc ${CMAKE_SOURCE_DIR}/docs/ORACLE.md)
