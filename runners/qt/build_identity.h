/* Fill an engine's build identity (probe `build` and `toolchain`) from the flags this runner was built with. */
#ifndef ZQT_BUILD_IDENTITY_H
#define ZQT_BUILD_IDENTITY_H

#include "zbench_kit.h"

void zqt_build_identity(zk_engine *e);

#endif
