#include "fuzz/campaign/gpu_groups.h"

#include <map>

namespace divfuzz::fuzz {

std::vector<GpuGroup> GroupSlotsByGpu(const std::vector<std::string>& slot_gpus) {
  std::vector<GpuGroup> groups;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < slot_gpus.size(); ++i) {
    auto [it, inserted] = index.emplace(slot_gpus[i], groups.size());
    if (inserted) groups.push_back({slot_gpus[i], {}});
    groups[it->second].slots.push_back(i);
  }
  return groups;
}

std::vector<int> GroupOfSlot(const std::vector<GpuGroup>& groups, size_t slots) {
  std::vector<int> of(slots, -1);
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t s : groups[g].slots) {
      if (s < slots) of[s] = static_cast<int>(g);
    }
  }
  return of;
}

std::vector<size_t> SlotsToRestart(const std::vector<GpuGroup>& groups, size_t group,
                                   const std::vector<bool>& alive) {
  std::vector<size_t> out;
  if (group >= groups.size()) return out;
  for (size_t s : groups[group].slots) {
    if (s < alive.size() && alive[s]) out.push_back(s);
  }
  return out;
}

bool MpsClientsNameNoGpu(size_t gpu_groups, bool server_per_gpu) {
  return server_per_gpu || gpu_groups == 1;
}

}  // namespace divfuzz::fuzz
