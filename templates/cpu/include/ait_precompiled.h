// What every cpu kernel source includes first, compiled once per target into a precompiled
// header (ait_build/build/precompiled.py): ait_cpu.h and the x86 intrinsics, which take g++
// longer to parse than most kernels take to compile. Kernels are compiled with `-include` of it.
#include "ait_cpu.h"
#if defined(__AVX2__)
#include <immintrin.h>
#endif
