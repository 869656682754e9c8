#include "minimize/environment.h"

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <dirent.h>
#include <dlfcn.h>
#include <sys/utsname.h>
#include <torch/version.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "exec/executor.h"

namespace divfuzz::minimize {
namespace {

std::string FirstLineValue(const std::string& path, const std::string& key, char sep) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const size_t at = line.find(sep);
    if (at == std::string::npos) continue;
    std::string v = line.substr(at + 1);
    absl::string_view s = absl::StripAsciiWhitespace(v);
    s = absl::StripPrefix(absl::StripSuffix(s, "\""), "\"");
    return std::string(s);
  }
  return "";
}

// "key=value" from show_config()'s build settings.
std::string BuildSetting(const std::string& config, const std::string& key) {
  const size_t at = config.find(key + "=");
  if (at == std::string::npos) return "";
  const size_t start = at + key.size() + 1;
  const size_t end = config.find_first_of(",\n", start);
  return config.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The path of a loaded shared object whose file name starts with `prefix`.
std::string LoadedLibrary(const std::string& prefix) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t slash = line.rfind('/');
    if (slash == std::string::npos) continue;
    const size_t path = line.find('/');
    if (line.compare(slash + 1, prefix.size(), prefix) == 0) return line.substr(path);
  }
  return "";
}

// A library `prefix`* next to another loaded one (the CUDA wheels keep them
// together), or its bare soname for the loader to find.
std::string SiblingLibrary(const std::string& loaded, const std::string& prefix) {
  const size_t slash = loaded.rfind('/');
  if (slash == std::string::npos) return "";
  const std::string dir = loaded.substr(0, slash);
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return "";
  std::string found;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(prefix, 0) == 0 && absl::StrContains(name, ".so")) {
      found = dir + "/" + name;
      break;
    }
  }
  closedir(d);
  return found;
}

// major.minor.patch from a libraryPropertyType getter (cublasGetProperty,
// cusolverGetProperty: 0 major, 1 minor, 2 patch).
std::string PropertyVersion(const std::string& path, const char* symbol) {
  if (path.empty()) return "";
  void* h = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (h == nullptr) return "";
  using Fn = int (*)(int, int*);
  auto fn = reinterpret_cast<Fn>(dlsym(h, symbol));
  std::string out;
  int v[3] = {0, 0, 0};
  if (fn != nullptr && fn(0, &v[0]) == 0 && fn(1, &v[1]) == 0 && fn(2, &v[2]) == 0) {
    out = absl::StrCat(v[0], ".", v[1], ".", v[2]);
  }
  dlclose(h);
  return out;
}

std::string CudaVersion(int v) { return absl::StrCat(v / 1000, ".", (v % 1000) / 10); }

// The GPU and driver through the driver API (libcuda.so.1), when present.
void GpuAndDriver(Environment& env) {
  void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (h == nullptr) return;
  using Init = int (*)(unsigned);
  using Version = int (*)(int*);
  using Get = int (*)(int*, int);
  using Name = int (*)(char*, int, int);
  using Attr = int (*)(int*, int, int);
  auto init = reinterpret_cast<Init>(dlsym(h, "cuInit"));
  auto version = reinterpret_cast<Version>(dlsym(h, "cuDriverGetVersion"));
  auto get = reinterpret_cast<Get>(dlsym(h, "cuDeviceGet"));
  auto name = reinterpret_cast<Name>(dlsym(h, "cuDeviceGetName"));
  auto attr = reinterpret_cast<Attr>(dlsym(h, "cuDeviceGetAttribute"));
  if (init == nullptr || init(0) != 0) return;
  int dv = 0;
  if (version != nullptr && version(&dv) == 0) {
    env.gpu_driver = absl::StrCat("supports CUDA ", CudaVersion(dv));
  }
  int dev = 0;
  char buf[256] = {0};
  if (get != nullptr && name != nullptr && get(&dev, 0) == 0 &&
      name(buf, sizeof(buf) - 1, dev) == 0) {
    env.gpu = buf;
    int major = 0, minor = 0;
    // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR
    if (attr != nullptr && attr(&major, 75, dev) == 0 && attr(&minor, 76, dev) == 0) {
      absl::StrAppend(&env.gpu, " (sm_", major, minor, ")");
    }
  }
  // The kernel module's version: what nvidia-smi calls the driver version.
  std::ifstream module("/sys/module/nvidia/version");
  std::string kmod;
  if (module >> kmod) {
    env.gpu_driver = env.gpu_driver.empty() ? kmod : absl::StrCat(kmod, " (", env.gpu_driver, ")");
  }
}

Environment Gather() {
  Environment env;
  env.torch_version = TORCH_VERSION;
  const std::string config = at::show_config();
  std::vector<std::string> build;
  if (const std::string cuda = BuildSetting(config, "CUDA_VERSION"); !cuda.empty()) {
    build.push_back("CUDA " + cuda);
  }
  if (const std::string cudnn = BuildSetting(config, "CUDNN_VERSION"); !cudnn.empty()) {
    build.push_back("cuDNN " + cudnn);
  }
  env.torch_build = build.empty() ? "CPU only" : absl::StrJoin(build, ", ");
  const std::string blas = BuildSetting(config, "BLAS_INFO");
  const std::string lapack = BuildSetting(config, "LAPACK_INFO");
  env.blas = absl::StrCat(blas.empty() ? "?" : blas, lapack.empty() || lapack == blas ? "" : "/",
                          lapack == blas ? "" : lapack);
  for (absl::string_view line : absl::StrSplit(config, '\n')) {
    if (absl::StrContains(line, "Math Kernel Library Version")) {
      absl::string_view v = absl::StripAsciiWhitespace(line);
      v = absl::StripPrefix(v, "- ");
      env.blas = absl::StrCat(env.blas, " (", std::string(v.substr(0, v.find(" for "))), ")");
    }
  }

  if (exec::CudaAvailable()) {
    const long rt = at::detail::getCUDAHooks().versionCUDART();
    if (rt > 0) env.cuda_runtime = CudaVersion(static_cast<int>(rt));
  }
  const std::string cublas = LoadedLibrary("libcublas.so");
  env.cublas = PropertyVersion(cublas, "cublasGetProperty");
  std::string cusolver = LoadedLibrary("libcusolver.so");
  if (cusolver.empty()) cusolver = SiblingLibrary(cublas, "libcusolver.so");
  env.cusolver = PropertyVersion(cusolver, "cusolverGetProperty");
  if (env.cuda_runtime.empty()) {
    // The runtime library torch loaded, even without a GPU.
    const std::string cudart = LoadedLibrary("libcudart.so");
    if (!cudart.empty()) {
      if (void* h = dlopen(cudart.c_str(), RTLD_LAZY | RTLD_LOCAL)) {
        using Fn = int (*)(int*);
        auto fn = reinterpret_cast<Fn>(dlsym(h, "cudaRuntimeGetVersion"));
        int v = 0;
        if (fn != nullptr && fn(&v) == 0 && v > 0) {
          env.cuda_runtime = absl::StrCat(CudaVersion(v), " (library; no usable GPU)");
        }
        dlclose(h);
      }
    }
  }
  GpuAndDriver(env);

  env.cpu_model = FirstLineValue("/proc/cpuinfo", "model name", ':');
  env.cpu_cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  env.cpu_capability = at::get_cpu_capability();
  if (const char* c = std::getenv("ATEN_CPU_CAPABILITY"); c != nullptr) env.cpu_capability_env = c;
  env.threads = at::get_num_threads();
  std::string os = FirstLineValue("/etc/os-release", "PRETTY_NAME", '=');
  utsname u{};
  if (uname(&u) == 0) {
    absl::StrAppend(&os, os.empty() ? "" : ", ", u.sysname, " ", u.release, " ", u.machine);
  }
  env.os = os;
#if defined(__clang__)
  env.compiler = std::string(absl::StripAsciiWhitespace(absl::StrCat("clang ", __clang_version__)));
#elif defined(__GNUC__)
  env.compiler = absl::StrCat("g++ ", __VERSION__);
#endif
  return env;
}

std::string OrNa(const std::string& s) { return s.empty() ? "n/a" : s; }

}  // namespace

std::vector<std::pair<std::string, std::string>> Environment::Items() const {
  std::string cpu = OrNa(cpu_model);
  if (cpu_cores > 0) absl::StrAppend(&cpu, ", ", cpu_cores, " logical cores");
  std::string isa = OrNa(cpu_capability);
  if (!cpu_capability_env.empty())
    absl::StrAppend(&isa, " (ATEN_CPU_CAPABILITY=", cpu_capability_env, ")");
  return {
      {"torch", absl::StrCat(OrNa(torch_version), " (built with ", OrNa(torch_build), ")")},
      {"CUDA runtime", OrNa(cuda_runtime)},
      {"cuBLAS", OrNa(cublas)},
      {"cuSOLVER", OrNa(cusolver)},
      {"GPU", gpu.empty() ? "none" : gpu},
      {"GPU driver", OrNa(gpu_driver)},
      {"CPU", cpu},
      {"CPU vector ISA (ATen dispatch)", isa},
      {"intra-op threads", absl::StrCat(threads)},
      {"BLAS/LAPACK", OrNa(blas)},
      {"OS", OrNa(os)},
      {"compiled with", OrNa(compiler)},
  };
}

const Environment& CurrentEnvironment() {
  static const Environment* env = new Environment(Gather());
  return *env;
}

}  // namespace divfuzz::minimize
