/* The engine's build identity and toolchain (docs/native-runner.md, "Build identity"), in a C file of its own:
 * the commit changes with every build of a checkout, and recompiling this is instant where a file including
 * Qt's headers is not. The Makefile passes ZK_BUILD_* for the C++ compiler that builds the engine. */
#include "zbench_kit.h"

#include "build_identity.h"

#ifdef ZQT_CXX_COMPILER
#undef ZK_BUILD_COMPILER
#define ZK_BUILD_COMPILER ZQT_CXX_COMPILER
#endif

void zqt_build_identity(zk_engine *e) {
    zk_engine identity = {ZK_BUILD_INIT};
    e->build_id = identity.build_id;
    e->build_describe = identity.build_describe;
    e->build_dirty = identity.build_dirty;
    e->build_compiler = identity.build_compiler;
    e->build_flags = identity.build_flags;
}
