// Several GPUs on one host: the campaign's worker slots grouped by GPU, each
// group with an MPS server of its own (fuzz/campaign/mps_server.h). A CUDA
// fault reaches every client of a server, and a server takes no new client
// until all have gone; with one server for every GPU one fault stopped every
// worker of the host. With one a GPU, a fault or an MPS restart stops only
// that GPU's workers. Pure (no CUDA, no processes), for a CPU test.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace divfuzz::fuzz {

struct GpuGroup {
  std::string gpu;            // the CUDA_VISIBLE_DEVICES value of its slots
  std::vector<size_t> slots;  // worker slot indices, ascending
};

// The slots of each GPU, in order of first appearance; `slot_gpus[i]` is
// slot i's GPU (CampaignConfig::gpus). Empty for the CPU pair.
std::vector<GpuGroup> GroupSlotsByGpu(const std::vector<std::string>& slot_gpus);

// Slot -> its group's index in `groups` (-1 for a slot in none).
std::vector<int> GroupOfSlot(const std::vector<GpuGroup>& groups, size_t slots);

// The slots a fault on `group`'s server stops and restarts: its own, never
// another GPU's. `alive[i]`: slot i has a running worker.
std::vector<size_t> SlotsToRestart(const std::vector<GpuGroup>& groups, size_t group,
                                   const std::vector<bool>& alive);

// Whether the workers of a running MPS server of ours leave CUDA_VISIBLE_DEVICES
// unset. A server started for one GPU sees it as its device 0, so a client that
// names the GPU by its host index (CUDA_VISIBLE_DEVICES=1 from Slurm, or a
// campaign per GPU) finds no device and every start faults. True with one
// server a GPU and with one GPU in all; false for one server over several GPUs
// (the user's own: it sees them all and the host indices hold).
bool MpsClientsNameNoGpu(size_t gpu_groups, bool server_per_gpu);

}  // namespace divfuzz::fuzz
