// Units: the factors from the units files and reports write (microseconds, GB, MB) to SI. Inside,
// every quantity is SI (seconds, bytes, bytes per second); a reader multiplies by one of these
// where it reads a file, a writer divides where it writes one. One definition for every room.
#pragma once

namespace commbound {

inline constexpr double kSecondsPerUs = 1e-6;
inline constexpr double kSecondsPerMs = 1e-3;
inline constexpr double kUsPerS = 1e6;
inline constexpr double kMsPerS = 1e3;
inline constexpr double kSecondsPerHour = 3600;
inline constexpr double kSecondsPerDay = 86400;
inline constexpr double kNsPerS = 1e9;
inline constexpr double kBytesPerGB = 1e9;  // decimal gigabytes, as datasheets and nccl-tests count
inline constexpr double kBytesPerMB = 1e6;
inline constexpr double kFlopsPerTFLOP = 1e12;
inline constexpr double kHzPerMHz = 1e6;

}  // namespace commbound
