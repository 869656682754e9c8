// The standalone C++ repro: repro_cpp/main.cpp and its CMakeLists.txt, built
// against libtorch with nothing but find_package(Torch):
//
//   cmake -S repro_cpp -B build -DCMAKE_PREFIX_PATH=<torch cmake folder>
//   cmake --build build && ./build/repro [TARGET_A TARGET_B]
//
// (with pip's torch: python3 -c 'import torch; print(torch.utils.cmake_prefix_path)').
// Like repro.py: inputs rebuilt bit-exactly from hex-float literals, every node
// called through the c10 dispatcher by its schema name, run on the CPU, on
// CUDA when available and on the float64 reference; prints the three results
// (and their exact bits), each side's float64 reference of the diverging node
// from its own inputs with the error in ULPs, the verdict and the wrong side;
// exits 1 when the divergence reproduces, 0 when it does not, 2 on failure.
#pragma once

#include <string>

#include "graph/program.h"
#include "minimize/emit_python.h"

namespace divfuzz::minimize {

struct CppRepro {
  std::string main_cpp;
  std::string cmake_lists;
};

// main.cpp is the program part and minimize/harness/repro_harness_main.cc,
// with `policy`'s tolerances at the diverging op (as EmitPython). Never fails:
// a spec that names no node of the program yields a program that says so and
// exits 2.
CppRepro EmitCpp(const graph::Program& program, const ReproSpec& spec,
                 const oracles::Policy& policy = oracles::DefaultPolicy());

}  // namespace divfuzz::minimize
