#!/usr/bin/env bash
# OSS-Fuzz / ClusterFuzzLite build: honours $CXX, $CXXFLAGS, $LIB_FUZZING_ENGINE and $OUT.
# Produces in $OUT: graph_fuzzer and parser_fuzzer, each with *_seed_corpus.zip, .options and
# (parser) .dict. $LIB_FUZZING_ENGINE is either a flag (-fsanitize=fuzzer, clang) or a path to
# a libFuzzer archive (g++ builds), as the two kinds of build in this project expect.
set -euo pipefail
SRC_DIR=$(cd "$(dirname "$0")/.." && pwd)
: "${OUT:?set OUT to the output folder}"
: "${CXX:=clang++}"
: "${LIB_FUZZING_ENGINE:=-fsanitize=fuzzer}"
BUILD_DIR=${BUILD_DIR:-$SRC_DIR/build-oss}
TORCH_CMAKE=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')

engine_args=()
if [ -f "$LIB_FUZZING_ENGINE" ]; then
  engine_args=(-DDIVFUZZ_LIBFUZZER_ARCHIVE="$LIB_FUZZING_ENGINE")
fi
# ClusterFuzz's sanitizer flags go to our code only; prebuilt libtorch is not rebuilt.
cmake -S "$SRC_DIR" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_CXX_FLAGS="${CXXFLAGS:-}" \
  -DCMAKE_PREFIX_PATH="$TORCH_CMAKE${CMAKE_PREFIX_PATH:+;$CMAKE_PREFIX_PATH}" \
  -DDIVFUZZ_BUILD_TESTS=OFF "${engine_args[@]}"
ninja -C "$BUILD_DIR" graph_fuzzer parser_fuzzer

mkdir -p "$OUT"
for f in graph_fuzzer parser_fuzzer; do
  cp "$BUILD_DIR/fuzz/$f" "$OUT/"
  cp "$SRC_DIR/fuzz/harness/$f.options" "$OUT/"
done
cp "$SRC_DIR/corpus/parser_fuzzer.dict" "$OUT/"
# OSS-Fuzz mode (docs/DEPLOY.md): graph_fuzzer runs the CPU pair and aborts on a bug-tier
# divergence that .clusterfuzzlite/known_bugs.txt does not list, naming its bucket, so
# ClusterFuzz deduplicates, minimizes and reports it like a crash. LLVMFuzzerInitialize reads
# graph_fuzzer.env beside the binary (ClusterFuzz passes no environment of ours).
# DIVFUZZ_OSS_ABORT_ON_BUG=0 builds it without (crashes only, as before).
{
  echo "DIVFUZZ_TARGETS=cpu,cpu-f64"
  echo "DIVFUZZ_ABORT_ON_BUG=${DIVFUZZ_OSS_ABORT_ON_BUG:-1}"
  echo "DIVFUZZ_BASELINE=graph_fuzzer.baseline"
  echo "DIVFUZZ_FINDINGS=/tmp/divfuzz-findings"
} > "$OUT/graph_fuzzer.env"
cp "$SRC_DIR/.clusterfuzzlite/known_bugs.txt" "$OUT/graph_fuzzer.baseline"
rm -f "$OUT/graph_fuzzer_seed_corpus.zip"
(cd "$SRC_DIR/corpus" && zip -q -j "$OUT/graph_fuzzer_seed_corpus.zip" seed/*.dfz families/*.dfz regressions/*.dfz)
# The parser's seeds: its own syntax examples plus every seed program (names made unique).
seeds=$(mktemp -d)
for f in "$SRC_DIR"/corpus/parser/*.dfz; do cp "$f" "$seeds/parser_$(basename "$f")"; done
for f in "$SRC_DIR"/corpus/seed/*.dfz; do cp "$f" "$seeds/seed_$(basename "$f")"; done
rm -f "$OUT/parser_fuzzer_seed_corpus.zip"
(cd "$seeds" && zip -q "$OUT/parser_fuzzer_seed_corpus.zip" ./*.dfz)
rm -rf "$seeds"
echo "built into $OUT: $(ls "$OUT" | tr '\n' ' ')"
