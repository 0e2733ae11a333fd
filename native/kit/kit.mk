# The kit's sources, for any Makefile that builds a runner on it (native/Makefile, runners/*/Makefile): include
# this file and compile $(KIT_SRC) (and $(KIT_GL_SRC) for an engine that draws with GLES2 on the kit's EGL
# context) with -I$(KIT_DIR). One list, so that a file added to the kit reaches every runner.
KIT_DIR := $(dir $(abspath $(lastword $(MAKEFILE_LIST))))
KIT_SRC := $(KIT_DIR)zbench_kit.c $(KIT_DIR)zjson.c
KIT_GL_SRC := $(KIT_DIR)zbench_kit_gl.c
KIT_HEADERS := $(wildcard $(KIT_DIR)*.h)
