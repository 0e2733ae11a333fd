// zbench-qt-gles2: the Qt 6 runner's OpenGL ES 2 backend, QPainter on a QOpenGLPaintDevice drawing into a
// framebuffer object of a QOpenGLContext (docs/native-runner.md, "Porting an engine" / "Qt 6"). Headless: Qt's
// eglfs platform on Mesa's surfaceless EGL display, with no screen (eglfs reads its size from the environment
// below instead of a framebuffer device), so no display server and no /dev/fb0 are needed.
#include <QOffscreenSurface>
#include <QOpenGLContext>
#include <QOpenGLFramebufferObject>
#include <QOpenGLFunctions>
#include <QOpenGLPaintDevice>
#include <QPainter>

#include <GLES2/gl2.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "qt_app.h"
#include "qt_scene.h"

extern "C" {
#include "build_identity.h"
}

#ifdef ZQT_BARE_LOOP
#include "bare_loop.h"
#endif

extern "C" {
#include "zbench_kit_gl.h"
}

#ifndef ZQT_VERSION
#define ZQT_VERSION "0.1.0"
#endif

namespace {

constexpr int SAMPLES = 4;

// zqt::FEATURES less `mesh`: on a multisampled target Qt's OpenGL paint engine anti-aliases every fill (OpenGL
// ES cannot turn multisampling off per draw), and a mesh must not be: its thousands of cell edges came out up to
// 65 levels off over a quarter of geometry.tris.n8192 (docs/native-runner.md, "Porting an engine").
const char *const *features() {
    static std::vector<const char *> list;
    if (list.empty()) {
        for (const char *const *f = zqt::FEATURES; *f; f++)
            if (strcmp(*f, "mesh") != 0) list.push_back(*f);
        list.push_back(nullptr);
    }
    return list.data();
}

struct Gles2 {
    zqt::Fonts fonts;
    std::unique_ptr<zqt::Scene> scene;
    QOpenGLContext *context = nullptr;
    QOffscreenSurface *surface = nullptr;
    std::unique_ptr<QOpenGLFramebufferObject> fbo, resolved;
    std::unique_ptr<QOpenGLPaintDevice> device;
    char vendor[128] = "", renderer[128] = "", version[128] = "", glsl[128] = "";
    GLint max_texture_size = 0;
    bool fallback_reported = false;
};

void copy_gl_string(char *out, size_t n, GLenum name) {
    const GLubyte *s = glGetString(name);
    snprintf(out, n, "%s", s ? (const char *)s : "");
}

int e_open(void *self, char *err, size_t errlen) {
    Gles2 *g = static_cast<Gles2 *>(self);
    if (g->context) return 0;
    // Set only where the environment has not: a device may name another EGL platform or screen.
    setenv("EGL_PLATFORM", "surfaceless", 0);
    setenv("QT_QPA_EGLFS_INTEGRATION", "none", 0);
    setenv("QT_QPA_EGLFS_FB", "/dev/null", 0);  // eglfs wants a framebuffer device to read a screen size from
    setenv("QT_QPA_EGLFS_WIDTH", "800", 0);
    setenv("QT_QPA_EGLFS_HEIGHT", "480", 0);
    setenv("QT_QPA_EGLFS_PHYSICAL_WIDTH", "150", 0);
    setenv("QT_QPA_EGLFS_PHYSICAL_HEIGHT", "90", 0);
    if (!zqt::app("eglfs")) {
        snprintf(err, errlen, "QGuiApplication could not start on the eglfs platform");
        return -1;
    }
    QSurfaceFormat format;
    format.setRenderableType(QSurfaceFormat::OpenGLES);
    format.setVersion(2, 0);
    format.setDepthBufferSize(0);
    format.setStencilBufferSize(8);
    g->context = new QOpenGLContext;
    g->context->setFormat(format);
    if (!g->context->create()) {
        snprintf(err, errlen, "QOpenGLContext::create failed for OpenGL ES 2 on eglfs (EGL_PLATFORM=%s)", getenv("EGL_PLATFORM"));
        return -1;
    }
    g->surface = new QOffscreenSurface;
    g->surface->setFormat(g->context->format());
    g->surface->create();
    if (!g->context->makeCurrent(g->surface)) {
        snprintf(err, errlen, "QOpenGLContext::makeCurrent failed");
        return -1;
    }
    copy_gl_string(g->vendor, sizeof g->vendor, GL_VENDOR);
    copy_gl_string(g->renderer, sizeof g->renderer, GL_RENDERER);
    copy_gl_string(g->version, sizeof g->version, GL_VERSION);
    copy_gl_string(g->glsl, sizeof g->glsl, GL_SHADING_LANGUAGE_VERSION);
    glGetIntegerv(GL_MAX_TEXTURE_SIZE, &g->max_texture_size);
    return 0;
}

void e_gpu_info(void *self, zk_buf *b) {
    Gles2 *g = static_cast<Gles2 *>(self);
    int bits = 0;
    const char *ext = zk_gl_timer_extension(&bits);
    zk_buf_add(b, "\"gl_vendor\": ");
    zk_buf_str(b, g->vendor);
    zk_buf_add(b, ", \"gl_renderer\": ");
    zk_buf_str(b, g->renderer);
    zk_buf_add(b, ", \"gl_version\": ");
    zk_buf_str(b, g->version);
    zk_buf_add(b, ", \"glsl_version\": ");
    zk_buf_str(b, g->glsl);
    zk_buf_add(b, ", \"max_texture_size\": %d, \"timer_query_extension\": ", (int)g->max_texture_size);
    zk_buf_str(b, ext);
    zk_buf_add(b, ", \"timer_query_bits\": %d, \"qt_paint_engine\": \"opengl2\"", bits);
}

const char *const *e_timer_sources(void *self) {
    (void)self;
    return zk_gl_timer_sources();
}

zk_gpu *e_open_timer(void *self, const char *source, char *err, size_t errlen) {
    (void)self;
    return zk_gl_timer_open(source, err, errlen);
}

int e_prepare(void *self, const zk_job *job, char *err, size_t errlen) {
    Gles2 *g = static_cast<Gles2 *>(self);
    if (job->width > g->max_texture_size || job->height > g->max_texture_size) {
        snprintf(err, errlen, "scene %dx%d is larger than GL_MAX_TEXTURE_SIZE %d", job->width, job->height, (int)g->max_texture_size);
        return ZK_EXIT_USAGE;
    }
    g->scene = std::make_unique<zqt::Scene>();
    g->scene->advanced_blends = false;
    int code = g->scene->compile(job, &g->fonts, err, errlen);
    if (code) return code;
    // Qt's OpenGL paint engine anti-aliases only through multisampling: 4 samples, as a Qt Quick or QOpenGLWidget
    // application asks for, resolved into a plain framebuffer for reading back. A stencil buffer: Qt clips to
    // paths through it.
    QOpenGLFramebufferObjectFormat format;
    format.setAttachment(QOpenGLFramebufferObject::CombinedDepthStencil);
    format.setSamples(SAMPLES);
    g->fbo = std::make_unique<QOpenGLFramebufferObject>(job->width, job->height, format);
    g->resolved = std::make_unique<QOpenGLFramebufferObject>(job->width, job->height);
    if (!g->fbo->isValid() || !g->resolved->isValid() || !QOpenGLFramebufferObject::hasOpenGLFramebufferBlit()) {
        snprintf(err, errlen, "no %dx%d framebuffer object with %d samples and a blit to resolve it", job->width, job->height, SAMPLES);
        return ZK_EXIT_FAILED;
    }
    g->device = std::make_unique<QOpenGLPaintDevice>(job->width, job->height);
    // Read what the paint engine has drawn so far: its batches are flushed by beginNativePainting. GL's rows
    // run bottom up (Qt's GL paint engine draws the image's top row at the framebuffer's top).
    // A multisampled framebuffer cannot be read: the area is resolved into the plain one first.
    int height = job->height;
    g->scene->grab = [g, height](QPainter &p, const QRect &area) {
        QImage image(area.size(), QImage::Format_RGBA8888_Premultiplied);
        p.beginNativePainting();
        QRect gl_area(area.x(), height - area.y() - area.height(), area.width(), area.height());
        QOpenGLFramebufferObject::blitFramebuffer(g->resolved.get(), gl_area, g->fbo.get(), gl_area);
        g->resolved->bind();
        glPixelStorei(GL_PACK_ALIGNMENT, 4);
        glReadPixels(gl_area.x(), gl_area.y(), gl_area.width(), gl_area.height(), GL_RGBA, GL_UNSIGNED_BYTE, image.bits());
        g->fbo->bind();
        p.endNativePainting();
        return image.mirrored();
    };
    while (glGetError() != GL_NO_ERROR) {}
    return 0;
}

int e_draw(void *self, int frame, double complexity, zk_counts *counts, char *err, size_t errlen) {
    Gles2 *g = static_cast<Gles2 *>(self);
    g->fbo->bind();
    QPainter p(g->device.get());
    if (!p.isActive()) {
        snprintf(err, errlen, "QPainter::begin failed on the OpenGL paint device");
        return -1;
    }
    g->scene->draw(p, frame, complexity, counts);
    return 0;  // the painter ends here: its last batch is issued to GL
}

void e_submit(void *self) {
    (void)self;
    glFlush();
}

int e_api_error(void *self, char *detail, size_t len) {
    (void)self;
    GLenum e = glGetError(), first = e;
    if (e == GL_NO_ERROR) return 0;
    while (e != GL_NO_ERROR) e = glGetError();
    snprintf(detail, len, "GL error 0x%04x in the frame", (unsigned)first);
    return 1;
}

const char *e_frame_issue(void *self, char *detail, size_t len) {
    Gles2 *g = static_cast<Gles2 *>(self);
    if (!g->fonts.sans_missing.empty() && !g->fallback_reported) {
        g->fallback_reported = true;
        snprintf(detail, len, "%s", g->fonts.sans_missing.c_str());
        return "font_fallback";
    }
    return nullptr;
}

int e_read_rgba(void *self, unsigned char *rgba, char *err, size_t errlen) {
    Gles2 *g = static_cast<Gles2 *>(self);
    QOpenGLFramebufferObject::blitFramebuffer(g->resolved.get(), g->fbo.get());
    QImage out = g->resolved->toImage().convertToFormat(QImage::Format_RGBA8888);
    if (out.isNull()) {
        snprintf(err, errlen, "reading the framebuffer object back failed");
        return -1;
    }
    size_t row = (size_t)out.width() * 4;
    for (int y = 0; y < out.height(); y++) memcpy(rgba + row * (size_t)y, out.constScanLine(y), row);
    return 0;
}

void e_close(void *self) {
    Gles2 *g = static_cast<Gles2 *>(self);
    g->scene.reset();
    g->device.reset();
    g->fbo.reset();
    g->resolved.reset();
    if (g->context) g->context->doneCurrent();
    delete g->surface;
    delete g->context;
    g->surface = nullptr;
    g->context = nullptr;
}

}  // namespace

int main(int argc, char **argv) {
    static Gles2 g;
    zk_engine e{};
    e.runner_name = "zbench-qt-gles2";
    e.runner_version = ZQT_VERSION;
    e.backend = "gles2";
    e.features = features();
    zqt_build_identity(&e);
    e.libraries_json = zqt::libraries_json();
    e.self = &g;
    e.open = e_open;
    e.gpu_info = e_gpu_info;
    e.timer_sources = e_timer_sources;
    e.open_timer = e_open_timer;
    e.prepare = e_prepare;
    e.draw = e_draw;
    e.submit = e_submit;
    e.api_error = e_api_error;
    e.frame_issue = e_frame_issue;
    e.read_rgba = e_read_rgba;
    e.close = e_close;
#ifdef ZQT_BARE_LOOP
    return zqt_bare_main(argc, argv, &e);
#else
    return zk_main(argc, argv, &e);
#endif
}
