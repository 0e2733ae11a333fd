// zbench-qt-raster: the Qt 6 runner's raster backend, QPainter on a QImage (docs/native-runner.md, "Porting an
// engine" / "Qt 6"). A CPU rasteriser: no GPU time source.
#include <QImage>
#include <QPainter>

#include <cstdio>
#include <memory>

#include "qt_app.h"
#include "qt_scene.h"

extern "C" {
#include "build_identity.h"
}

#ifdef ZQT_BARE_LOOP
#include "bare_loop.h"
#endif

#ifndef ZQT_VERSION
#define ZQT_VERSION "0.1.0"
#endif

namespace {

struct Raster {
    zqt::Fonts fonts;
    std::unique_ptr<zqt::Scene> scene;
    QImage image;
    bool fallback_reported = false;
};

int e_open(void *self, char *err, size_t errlen) {
    (void)self;
    if (!zqt::app("offscreen")) {
        snprintf(err, errlen, "QGuiApplication could not start on the offscreen platform");
        return -1;
    }
    return 0;
}

void e_gpu_info(void *self, zk_buf *b) {
    (void)self;
    zk_buf_add(b, "\"qt_paint_engine\": \"raster\"");
}

const char *const *e_timer_sources(void *self) {
    (void)self;
    static const char *const none[] = {"none", nullptr};
    return none;
}

zk_gpu *e_open_timer(void *self, const char *source, char *err, size_t errlen) {
    (void)self;
    if (source && strcmp(source, "none") != 0) {
        snprintf(err, errlen, "the raster backend has no GPU: gpu_timer %s cannot run (only none)", source);
        return nullptr;
    }
    return zk_no_timer();
}

int e_prepare(void *self, const zk_job *job, char *err, size_t errlen) {
    Raster *r = static_cast<Raster *>(self);
    r->scene = std::make_unique<zqt::Scene>();
    int code = r->scene->compile(job, &r->fonts, err, errlen);
    if (code) return code;
    r->image = QImage(job->width, job->height, QImage::Format_ARGB32_Premultiplied);
    // The raster engine has written every pixel of a draw when it returns: the image holds the frame so far.
    r->scene->grab = [r](QPainter &, const QRect &area) { return r->image.copy(area); };
    if (r->image.isNull()) {
        snprintf(err, errlen, "no memory for a %dx%d image", job->width, job->height);
        return ZK_EXIT_FAILED;
    }
    return 0;
}

int e_draw(void *self, int frame, double complexity, zk_counts *counts, char *err, size_t errlen) {
    Raster *r = static_cast<Raster *>(self);
    QPainter p(&r->image);
    if (!p.isActive()) {
        snprintf(err, errlen, "QPainter::begin failed on the %dx%d image", r->image.width(), r->image.height());
        return -1;
    }
    r->scene->draw(p, frame, complexity, counts);
    return 0;  // the painter ends here: the raster engine has drawn every pixel when end() returns
}

void e_submit(void *self) { (void)self; }

int e_api_error(void *self, char *detail, size_t len) {
    (void)self;
    (void)detail;
    (void)len;
    return 0;
}

const char *e_frame_issue(void *self, char *detail, size_t len) {
    Raster *r = static_cast<Raster *>(self);
    if (!r->fonts.sans_missing.empty() && !r->fallback_reported) {
        r->fallback_reported = true;
        snprintf(detail, len, "%s", r->fonts.sans_missing.c_str());
        return "font_fallback";
    }
    return nullptr;
}

int e_read_rgba(void *self, unsigned char *rgba, char *err, size_t errlen) {
    Raster *r = static_cast<Raster *>(self);
    QImage out = r->image.convertToFormat(QImage::Format_RGBA8888);
    if (out.isNull()) {
        snprintf(err, errlen, "no memory to convert the capture");
        return -1;
    }
    size_t row = (size_t)out.width() * 4;
    for (int y = 0; y < out.height(); y++) memcpy(rgba + row * (size_t)y, out.constScanLine(y), row);
    return 0;
}

void e_close(void *self) {
    Raster *r = static_cast<Raster *>(self);
    r->scene.reset();
}

}  // namespace

int main(int argc, char **argv) {
    static Raster r;
    zk_engine e{};
    e.runner_name = "zbench-qt-raster";
    e.runner_version = ZQT_VERSION;
    e.backend = "raster";
    e.features = zqt::FEATURES;
    zqt_build_identity(&e);
    e.libraries_json = zqt::libraries_json();
    e.self = &r;
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
