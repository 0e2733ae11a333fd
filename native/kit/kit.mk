# The kit's sources, for any Makefile that builds a runner on it (native/Makefile, runners/*/Makefile): include
# this file and compile $(KIT_SRC) (and $(KIT_GL_SRC) for an engine that draws with GLES2 on the kit's EGL
# context) with -I$(KIT_DIR). One list, so that a file added to the kit reaches every runner.
#
# KIT_SRC holds the portable core and the platform layer of KIT_PLATFORM (zbench_platform.h): linux, android
# or darwin (macOS and iOS). Left unset, it follows the target of $(CC) (`$(CC) -dumpmachine`: "...-android..."
# is android; "...-darwin...", "...-macos...", "...-ios..." are darwin; anything else is linux), so a Makefile
# that sets CC for its target needs nothing more. It is worked out when KIT_SRC is first expanded, after the
# including Makefile has set CC.
KIT_DIR := $(dir $(abspath $(lastword $(MAKEFILE_LIST))))
KIT_TARGET = $(shell $(CC) -dumpmachine 2>/dev/null)
KIT_PLATFORM_OF = $(if $(findstring android,$(1)),android,$(if $(or $(findstring darwin,$(1)),$(findstring macos,$(1)),\
    $(findstring -ios,$(1)),$(findstring apple,$(1))),darwin,linux))
KIT_PLATFORM ?= $(eval KIT_PLATFORM := $(call KIT_PLATFORM_OF,$(KIT_TARGET)))$(KIT_PLATFORM)
KIT_PLATFORM_SRC_linux := platform_linux.c platform_procfs.c
KIT_PLATFORM_SRC_android := platform_android.c platform_procfs.c
KIT_PLATFORM_SRC_darwin := platform_darwin.c
KIT_SRC = $(KIT_DIR)zbench_kit.c $(KIT_DIR)zjson.c $(addprefix $(KIT_DIR),$(or $(KIT_PLATFORM_SRC_$(KIT_PLATFORM)),\
    $(error KIT_PLATFORM=$(KIT_PLATFORM) is not one of linux, android, darwin (native/kit/kit.mk))))
KIT_GL_SRC := $(KIT_DIR)zbench_kit_gl.c
KIT_HEADERS := $(wildcard $(KIT_DIR)*.h)
