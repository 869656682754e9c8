#include "fuzz/cli/backward_announcer.h"

#include <cstdio>
#include <mutex>

namespace divfuzz::fuzz {
namespace {

std::mutex g_mu;
std::string g_target = "?";
int g_node = -1;

std::unique_ptr<at::ObserverContext> OnBackward(const at::RecordFunction& fn) {
  std::string name = fn.name();
  // One word per field: the reader splits the line on spaces.
  for (char& ch : name) {
    if (ch == ' ') ch = '_';
  }
  std::lock_guard<std::mutex> lock(g_mu);
  std::printf("BACKWARD %s %d %s\n", g_target.c_str(), g_node, name.c_str());
  std::fflush(stdout);
  return nullptr;
}

}  // namespace

BackwardAnnouncer::BackwardAnnouncer() {
  handle_ = at::addGlobalCallback(
      at::RecordFunctionCallback(&OnBackward).scopes({at::RecordScope::BACKWARD_FUNCTION}));
}

BackwardAnnouncer::~BackwardAnnouncer() { at::removeCallback(handle_); }

void BackwardAnnouncer::At(const std::string& target, int node) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_target = target;
  g_node = node;
}

}  // namespace divfuzz::fuzz
