// dpfil.cu compiled as C for the stand-in driver, like the CPU emulator does
// (cuda/emu_kernels.c), followed by the generated table of its kernels. The Makefile
// compiles this file twice: with -fsanitize=thread -DSI_CHECKED, so that every load
// and store of a kernel calls the stand-in's own __tsan_* hooks (hooks.c: memcheck
// and race check; libtsan is never linked), and plainly for the unchecked mode.
#include <stdint.h>
#include <string.h>

#include "../kernels/hostemu.h"
#include "standin.h"

#include "../kernels/dpfil.cu"

#ifdef SI_CHECKED
#define SI_TABLE si_kernels_checked
#else
#define SI_TABLE si_kernels_fast
#endif

#include "kernels_gen.h"
