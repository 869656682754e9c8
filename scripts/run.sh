#!/usr/bin/env bash
# The main job: set up, build, then a short campaign on the default target pair
# (cpu vs cuda with a GPU, cpu vs the cpu-f64 reference without). Findings go to
# findings/ (index.jsonl, one folder per bucket with program.dfz and repro.py).
# Extra arguments go to 'divfuzz campaign', e.g.: bash scripts/run.sh --seconds=300
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec build/fuzz/divfuzz campaign --seconds=60 --corpus=corpus/seed,corpus/families --findings=findings \
  --work=campaign "$@"
