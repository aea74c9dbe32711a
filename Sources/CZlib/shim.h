#ifndef FLEETBENCH_CZLIB_SHIM_H
#define FLEETBENCH_CZLIB_SHIM_H
#include <zlib.h>

// deflateInit / inflateInit are macros over deflateInit_ / inflateInit_; give Swift callable functions.
static inline int fb_deflateInit(z_streamp stream, int level) { return deflateInit(stream, level); }
static inline int fb_inflateInit(z_streamp stream) { return inflateInit(stream); }
#endif
