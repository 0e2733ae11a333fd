/* Writes every program zbench-gles2 compiles into a folder, one file a shader (NAME.vert, NAME.frag), for
 * glslangValidator (native/gles2/check_shaders.sh): each kind clipped and not, at the device's precision and at
 * mediump, and the `shader` op at the loop and fetch counts of the corpus's extremes. Needs no GL. */
#include <stdio.h>
#include <stdlib.h>

#include "shaders.h"

static int write_file(const char *dir, const char *name, const char *text) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "shader_dump: cannot write %s\n", path);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTDIR (an existing folder)\n", argv[0]);
        return 2;
    }
    if (write_file(argv[1], "vertex.vert", ZB_VERTEX_SHADER)) return 1;
    static const int effects[][3] = {{0, 0, 0}, {2, 1, 0}, {2, 16, 1}, {1024, 64, 0}, {1024, 64, 1}};
    int count = 1;
    for (int kind = 0; kind < ZB_KINDS; kind++) {
        int variants = kind == ZB_EFFECT ? (int)(sizeof effects / sizeof *effects) : 1;
        for (int v = 0; v < variants; v++)
            for (int clipped = 0; clipped < 2; clipped++)
                for (int mediump = 0; mediump < 2; mediump++) {
                    const int *e = effects[v];
                    char *src = zb_fragment_source(kind, clipped, mediump, e[0], e[1], e[2]);
                    char name[128];
                    if (kind == ZB_EFFECT)
                        snprintf(name, sizeof name, "%s-l%d-f%d%s-%s-%s.frag", zb_kind_names[kind], e[0], e[1], e[2] ? "-dep" : "",
                                 clipped ? "clipped" : "unclipped", mediump ? "mediump" : "default");
                    else
                        snprintf(name, sizeof name, "%s-%s-%s.frag", zb_kind_names[kind], clipped ? "clipped" : "unclipped",
                                 mediump ? "mediump" : "default");
                    if (!src || write_file(argv[1], name, src)) { free(src); return 1; }
                    free(src);
                    count++;
                }
    }
    printf("%d shaders\n", count);
    return 0;
}
