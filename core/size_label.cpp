#include "core/size_label.hpp"

#include <cstdio>

namespace commbound {

std::string size_label(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char text[64];
  if (bytes == static_cast<double>(static_cast<long>(bytes))) {
    std::snprintf(text, sizeof text, "%.0f %s", bytes, units[u]);
  } else {
    std::snprintf(text, sizeof text, "%.2f %s", bytes, units[u]);
  }
  return text;
}

}  // namespace commbound
