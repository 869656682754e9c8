// The campaign's supervisor: libFuzzer workers for a time budget, each
// replaced when it dies; what killed one replayed into crash and hang
// findings (artifact_triage.h), new buckets minimized beside the fuzzing
// (reduction_queue.h), the work folder checkpointed for --resume (state.h),
// a status line every few seconds and a summary at the end (status.h).
#pragma once

#include <string>
#include <vector>

#include "fuzz/campaign/fail_on.h"
#include "fuzz/campaign/mps_server.h"
#include "fuzz/campaign/state.h"
#include "fuzz/settings.h"

namespace divfuzz::fuzz {

// Runs the campaign in `work` (corpus/, crashes/ and logs/ exist, and
// campaign.json is saved) from `state` to the end of config.budget_seconds,
// Ctrl-C or a worker that cannot record findings; prints the summary and
// returns the exit code (exit_codes.h; `fail_on` decides 0 or 1). `mps`: one
// MPS server a GPU (in the order of GroupSlotsByGpu(config.gpus), each
// worker pointed at its GPU's), or one for all (perhaps not running), whose
// clients find it through CUDA_MPS_PIPE_DIRECTORY, which the caller sets.
int SuperviseCampaign(std::string work, CampaignConfig config, CampaignState state,
                      FailOn fail_on, std::vector<MpsServer> mps);

}  // namespace divfuzz::fuzz
