#include "exec/scalar_helper.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/view_as_real.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "exec/dtype_convert.h"
#include "exec/executor.h"
#include "exec/plugins.h"
#include "graph/gradient.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "ops/infer.h"

namespace divfuzz::exec {
namespace {

constexpr char kFdEnv[] = "DIVFUZZ_EXEC_HELPER_FD";

// --- framing -------------------------------------------------------------

bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool WriteFrame(int fd, const std::string& s) {
  const uint64_t n = s.size();
  return WriteAll(fd, &n, sizeof(n)) && WriteAll(fd, s.data(), s.size());
}

bool ReadFrame(int fd, std::string* s) {
  uint64_t n = 0;
  if (!ReadAll(fd, &n, sizeof(n)) || n > (uint64_t{1} << 34)) return false;
  s->resize(n);
  return ReadAll(fd, s->data(), n);
}

// --- RunResult <-> bytes -------------------------------------------------

class Writer {
 public:
  template <typename T>
  void Put(T v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  void Str(const std::string& s) {
    Put<uint64_t>(s.size());
    out_ += s;
  }
  void Tensor(const at::Tensor& t) {
    if (!t.defined()) {
      Put<int8_t>(-1);
      return;
    }
    const at::Tensor c = t.contiguous();
    Put<int8_t>(static_cast<int8_t>(c.scalar_type()));
    Put<uint32_t>(static_cast<uint32_t>(c.dim()));
    for (int64_t s : c.sizes()) Put<int64_t>(s);
    const size_t bytes = c.numel() * c.element_size();
    Put<uint64_t>(bytes);
    out_.append(static_cast<const char*>(c.data_ptr()), bytes);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <typename T>
  bool Get(T* v) {
    if (pos_ + sizeof(T) > in_.size()) return false;
    std::memcpy(v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool Str(std::string* s) {
    uint64_t n = 0;
    if (!Get(&n) || pos_ + n > in_.size()) return false;
    *s = in_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool Tensor(at::Tensor* t) {
    int8_t type = 0;
    if (!Get(&type)) return false;
    if (type < 0) {
      *t = at::Tensor();
      return true;
    }
    uint32_t dim = 0;
    if (!Get(&dim) || dim > 64) return false;
    std::vector<int64_t> sizes(dim);
    for (int64_t& s : sizes) {
      if (!Get(&s)) return false;
    }
    uint64_t bytes = 0;
    if (!Get(&bytes) || pos_ + bytes > in_.size()) return false;
    *t = at::empty(sizes, at::TensorOptions().dtype(static_cast<at::ScalarType>(type)));
    if (bytes != static_cast<uint64_t>(t->numel() * t->element_size())) return false;
    std::memcpy(t->data_ptr(), in_.data() + pos_, bytes);
    pos_ += bytes;
    return true;
  }

 private:
  const std::string& in_;
  size_t pos_ = 0;
};

using Formats = std::map<std::string, std::vector<int64_t>>;

void WriteFormats(Writer& w, const Formats& formats) {
  w.Put<uint32_t>(static_cast<uint32_t>(formats.size()));
  for (const auto& [name, strides] : formats) {
    w.Str(name);
    w.Put<uint32_t>(static_cast<uint32_t>(strides.size()));
    for (int64_t v : strides) w.Put<int64_t>(v);
  }
}

bool ReadFormats(Reader& in, Formats* formats) {
  uint32_t n = 0;
  if (!in.Get(&n)) return false;
  for (uint32_t i = 0; i < n; ++i) {
    std::string name;
    uint32_t k = 0;
    if (!in.Str(&name) || !in.Get(&k) || k > 64) return false;
    std::vector<int64_t>& strides = (*formats)[name];
    strides.resize(k);
    for (int64_t& v : strides) {
      if (!in.Get(&v)) return false;
    }
  }
  return true;
}

std::string Serialize(const RunResult& r) {
  Writer w;
  w.Str(r.setup_error);
  w.Str(r.cpu_capability);
  w.Put<uint32_t>(static_cast<uint32_t>(r.nodes.size()));
  for (const NodeResult& n : r.nodes) {
    w.Put<uint8_t>(n.error.has_value());
    if (n.error) {
      w.Put<uint8_t>(static_cast<uint8_t>(n.error->kind));
      w.Str(n.error->message);
      w.Put<uint8_t>((n.error->declined ? 1 : 0) | (n.error->isolable ? 2 : 0));
    }
    w.Put<uint32_t>(static_cast<uint32_t>(n.outputs.size()));
    for (const at::Tensor& t : n.outputs) w.Tensor(t);
    // What the gradient oracle reads of a run: the backward node a forward
    // node recorded and a gradient statement's per-value gradients.
    w.Str(n.grad_fn);
    w.Put<uint8_t>(n.returns_input);
    w.Put<uint32_t>(static_cast<uint32_t>(n.value_grads.size()));
    for (const auto& [name, t] : n.value_grads) {
      w.Str(name);
      w.Tensor(t);
    }
    WriteFormats(w, n.value_grad_formats);
  }
  w.Put<uint32_t>(static_cast<uint32_t>(r.inputs.size()));
  for (const auto& [name, t] : r.inputs) {
    w.Str(name);
    w.Tensor(t);
  }
  WriteFormats(w, r.formats);
  return w.Take();
}

bool Deserialize(const std::string& bytes, RunResult* r) {
  Reader in(bytes);
  uint32_t nodes = 0, inputs = 0;
  if (!in.Str(&r->setup_error) || !in.Str(&r->cpu_capability) || !in.Get(&nodes)) return false;
  for (uint32_t i = 0; i < nodes; ++i) {
    NodeResult& n = r->nodes.emplace_back();
    uint8_t has_error = 0;
    if (!in.Get(&has_error)) return false;
    if (has_error) {
      uint8_t kind = 0, declined = 0;
      NodeError e;
      if (!in.Get(&kind) || !in.Str(&e.message) || !in.Get(&declined)) return false;
      e.kind = static_cast<NodeError::Kind>(kind);
      e.declined = (declined & 1) != 0;
      e.isolable = (declined & 2) != 0;
      n.error = e;
    }
    uint32_t outputs = 0;
    if (!in.Get(&outputs)) return false;
    for (uint32_t o = 0; o < outputs; ++o) {
      if (!in.Tensor(&n.outputs.emplace_back())) return false;
    }
    uint8_t returns_input = 0;
    uint32_t grads = 0;
    if (!in.Str(&n.grad_fn) || !in.Get(&returns_input) || !in.Get(&grads)) return false;
    n.returns_input = returns_input != 0;
    for (uint32_t g = 0; g < grads; ++g) {
      std::string name;
      at::Tensor t;
      if (!in.Str(&name) || !in.Tensor(&t)) return false;
      n.value_grads[name] = t;
    }
    if (!ReadFormats(in, &n.value_grad_formats)) return false;
  }
  if (!in.Get(&inputs)) return false;
  for (uint32_t i = 0; i < inputs; ++i) {
    std::string name;
    at::Tensor t;
    if (!in.Str(&name) || !in.Tensor(&t)) return false;
    r->inputs[name] = t;
  }
  return ReadFormats(in, &r->formats);
}

// --- the helper side -----------------------------------------------------

[[noreturn]] void Serve(int fd) {
  // The parent's plugins replace kernels: the scalar side must run them too.
  if (const char* plugins = std::getenv("DIVFUZZ_PLUGINS"); plugins != nullptr) {
    (void)LoadPlugins(plugins);
  }
  std::string request;
  while (ReadFrame(fd, &request)) {
    RunResult result;
    result.cpu_capability = CpuCapability();
    absl::StatusOr<graph::Program> program = graph::ParseProgram(request, "<cpu-scalar>");
    if (!program.ok()) {
      result.setup_error = std::string(program.status().message());
    } else {
      // Only the cpu-f64 target needs types; a program outside the catalogue
      // still runs through the dispatcher.
      absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(*program);
      result = Run(*program, types.ok() ? *types : ops::TypeEnv{}, Target::kCpu);
      result.target = Target::kCpuScalar;
    }
    if (!WriteFrame(fd, Serialize(result))) break;
  }
  _exit(0);
}

// A process started as the helper serves requests and exits before main().
// libtorch's own static initializers (operator registration) have run by
// then: shared libraries are initialized before the executable.
const bool kHelperBoot = [] {
  if (const char* fd = std::getenv(kFdEnv)) Serve(std::atoi(fd));
  return true;
}();

// --- the parent side -----------------------------------------------------

struct Helper {
  pid_t pid = -1;
  int fd = -1;
};

std::mutex helper_mutex;
Helper helper;

void Stop(Helper& h) {
  if (h.fd >= 0) close(h.fd);
  if (h.pid > 0) {
    kill(h.pid, SIGKILL);
    waitpid(h.pid, nullptr, 0);
  }
  h = Helper{};
}

bool Start(Helper& h, std::string* error) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    *error = "socketpair failed";
    return false;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    *error = "fork failed";
    return false;
  }
  if (pid == 0) {
    // A parent killed mid-node (a hang's deadline) must not leave its helper
    // running on: PDEATHSIG survives execv.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    close(fds[0]);
    const int child_fd = dup(fds[1]);  // without CLOEXEC: it survives exec
    setenv(kFdEnv, std::to_string(child_fd).c_str(), 1);
    setenv("ATEN_CPU_CAPABILITY", "default", 1);
    char name[] = "divfuzz-cpu-scalar-helper";
    char* argv[] = {name, nullptr};
    execv("/proc/self/exe", argv);
    _exit(127);
  }
  close(fds[1]);
  h.pid = pid;
  h.fd = fds[0];
  return true;
}

RunResult Request(const std::string& program_text) {
  std::lock_guard<std::mutex> lock(helper_mutex);
  RunResult result;
  result.target = Target::kCpuScalar;
  std::string error;
  if (helper.pid < 0 && !Start(helper, &error)) {
    result.setup_error = absl::StrCat("cpu-scalar helper: ", error);
    return result;
  }
  std::string reply;
  if (!WriteFrame(helper.fd, program_text) || !ReadFrame(helper.fd, &reply) ||
      !Deserialize(reply, &result)) {
    int status = 0;
    const pid_t pid = helper.pid;
    close(helper.fd);
    const bool exited = waitpid(pid, &status, 0) == pid;
    helper = Helper{};
    result = RunResult{};
    result.target = Target::kCpuScalar;
    result.setup_error = exited && WIFSIGNALED(status)
                             ? absl::StrCat("cpu-scalar helper died with signal ", WTERMSIG(status))
                             : "cpu-scalar helper stopped answering";
    return result;
  }
  result.target = Target::kCpuScalar;
  return result;
}

// An input of a helper's program holding `t`'s values exactly.
graph::Input ExactInput(const std::string& name, const at::Tensor& t) {
  graph::Input in;
  in.name = name;
  in.type.dtype = FromScalarType(t.scalar_type()).value_or(graph::DType::kF64);
  in.type.shape = t.sizes().vec();
  in.payload.kind = graph::Payload::Kind::kValues;
  const at::Tensor d =
      (t.is_complex() ? at::view_as_real(t.contiguous()) : t).to(at::kDouble).contiguous();
  in.payload.values.assign(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
  return in;
}

}  // namespace

RunResult RunInScalarHelper(const graph::Program& program) {
  (void)kHelperBoot;
  return Request(graph::PrintProgram(program));
}

VjpResult RunNodeVjpInScalarHelper(const graph::Node& node,
                                   const std::map<std::string, at::Tensor>& values,
                                   const std::vector<at::Tensor>& cotangents,
                                   const std::vector<std::string>& wrt) {
  (void)kHelperBoot;
  VjpResult r;
  r.wrt = wrt;
  // The node, then a gradient statement over its results that have a
  // cotangent: the helper's run takes the backward in ATen's scalar kernels.
  graph::Program p;
  for (const auto& [name, t] : values) {
    if (t.defined()) p.inputs.push_back(ExactInput(name, t));
  }
  p.nodes.push_back(node);
  graph::GradCall call;
  call.listed_outputs = true;
  call.wrt = wrt;
  for (size_t i = 0; i < node.results.size() && i < cotangents.size(); ++i) {
    if (!cotangents[i].defined()) continue;
    const std::string name = absl::StrCat("divfuzz_cotangent", i);
    p.inputs.push_back(ExactInput(name, cotangents[i]));
    call.outputs.push_back(node.results[i]);
    call.cotangents.push_back(name);
  }
  std::vector<std::string> grads;
  for (size_t i = 0; i < wrt.size(); ++i) grads.push_back(absl::StrCat("divfuzz_grad", i));
  if (call.outputs.empty() || wrt.empty()) {
    r.result.error = NodeError{NodeError::Kind::kRaised, "nothing to differentiate"};
    return r;
  }
  p.nodes.push_back(graph::MakeGradNode(call, grads));
  p.outputs = grads;
  RunResult run = Request(graph::PrintProgram(p));
  if (!run.setup_error.empty() || run.nodes.size() != 2) {
    r.result.error = NodeError{NodeError::Kind::kRaised,
                               run.setup_error.empty() ? "cpu-scalar helper: no result"
                                                       : run.setup_error};
    return r;
  }
  r.grad_fn = run.nodes[0].grad_fn;
  r.result = run.nodes[0].error ? run.nodes[0] : run.nodes[1];
  if (!r.result.error && r.result.outputs.size() != wrt.size()) {
    r.result.error = NodeError{NodeError::Kind::kRaised, "cpu-scalar helper: gradients missing"};
  }
  return r;
}

NodeResult RunNodeInScalarHelper(const graph::Node& node,
                                 const std::map<std::string, at::Tensor>& values) {
  // A one-node program whose inputs hold the values exactly.
  graph::Program p;
  for (const auto& [name, t] : values) {
    if (t.defined()) p.inputs.push_back(ExactInput(name, t));
  }
  p.nodes.push_back(node);
  p.outputs = node.results;
  RunResult r = Request(graph::PrintProgram(p));
  if (!r.setup_error.empty() || r.nodes.empty()) {
    return NodeResult{{}, {}, NodeError{NodeError::Kind::kRaised, r.setup_error}};
  }
  return r.nodes[0];
}

}  // namespace divfuzz::exec
