// cl_programs.hpp — building generated OpenCL C programs, through an on-disk cache of program binaries.
//
// Key: a 128-bit hash of the source, the build options and the device's identity (name, driver version,
// platform version), so a driver update or another device never picks up a stale binary. Directory:
// $PRIMKIT_CACHE_DIR, else $XDG_CACHE_HOME/primkit, else ~/.cache/primkit (an "opencl" folder inside);
// PRIMKIT_OPENCL_DISK_CACHE=0 turns it off. A missing, truncated or corrupt entry (checked by length and hash)
// is ignored and rewritten; writes go through a temporary file and rename, so concurrent processes never see a
// half-written entry.
#pragma once

#include <string>

#include "cl_util.hpp"

namespace pk::ocl {

struct BuildInfo {
  bool from_disk = false;  // loaded from the disk cache (else compiled from source)
  double seconds = 0;      // wall time of the build
};

// The cache folder in use ("" when the disk cache is off or cannot be created).
const std::string &disk_cache_dir();

// Builds `source` for one device. On failure returns a null program and records an error whose message carries
// the OpenCL error name and the start of the build log.
Program build_program(cl_context context, cl_device_id device, const std::string &device_key, const std::string &source,
                      const std::string &options, BuildInfo *info);

}  // namespace pk::ocl
