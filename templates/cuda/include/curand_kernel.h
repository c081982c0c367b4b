// ait-build: an empty stand-in for the CUDA toolkit's curand_kernel.h, which some toolkits lack.
// CUTLASS's example-41 attention kernel (kernel_forward.h) includes it unconditionally but only
// uses cuRAND for dropout under HAS_PYTORCH, which our builds never define. As an -I folder it
// shadows the toolkit's header where one exists; nothing in a generated source calls cuRAND.
#pragma once
