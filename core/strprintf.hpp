// strprintf: printf into a std::string, for the places that must print exactly as a C program
// does (nccl-tests' columns) and for kernels/, which builds on the GPU box without fmt.
// Host-only, C++17 (kernels/ includes it).
#pragma once

#include <string>

namespace commbound {

[[gnu::format(printf, 1, 2)]] std::string strprintf(const char* format, ...);

}  // namespace commbound
