#!/usr/bin/env bash
# Regenerates docs/CLI.md from fuzz/cli/commands.def and fuzz/settings.def, as
# the built divfuzz prints them (tests/fuzz_cli_test.cc checks the two agree).
# Usage: scripts/gen_cli_md.sh [BUILD_DIR]   (default: build; DIVFUZZ=path wins)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${DIVFUZZ:-${1:-build}/fuzz/divfuzz}
[ -x "$bin" ] || { echo "gen_cli_md: $bin is not built (ninja -C ${1:-build} divfuzz)" >&2; exit 2; }
"$bin" help --markdown > docs/CLI.md.tmp
mv docs/CLI.md.tmp docs/CLI.md
echo "wrote docs/CLI.md"
