// The display list (docs/display-list.md) compiled once for QPainter and drawn per frame onto any paint device:
// the part of the Qt 6 runner both backends share (raster: a QImage; gles2: a QOpenGLPaintDevice). Each op's
// mapping onto QPainter is in docs/native-runner.md, "Porting an engine" / "Qt 6".
#ifndef ZBENCH_QT_SCENE_H
#define ZBENCH_QT_SCENE_H

#include <QByteArray>
#include <QColor>
#include <QFont>
#include <QImage>
#include <QPainter>
#include <QString>
#include <QStringList>

#include <functional>
#include <memory>
#include <string>
#include <vector>

extern "C" {
#include "zbench_kit.h"
}

namespace zqt {

// The ops the runner draws on both backends: the probe's features. Left out, and so skipped by the kit with
// feature_skipped: video, etc2_image, tap_target (docs/native-runner.md, "Porting an engine" / "Qt 6" says why).
extern const char *const FEATURES[];

// A number of the display list: a constant, an animation of the frame index, or the frame's complexity.
struct Num {
    enum Kind { CONST, LINEAR, SINE, STEP, COMPLEXITY } kind = CONST;
    double a = 0, b = 0, c = 0;
    std::vector<double> values;
    int every = 1;
    double at(int frame, double complexity) const;
    bool animated() const { return kind != CONST; }
};

struct FrameState {
    int frame = 0;
    double complexity = -1;
    int i = 0;  // the innermost repeat's index, for "{i}" in text
    zk_counts *counts = nullptr;
};

struct Node;
using Nodes = std::vector<std::unique_ptr<Node>>;

// What the text ops draw with: DejaVu Sans loaded from its file (QFontDatabase::addApplicationFont), so that the
// glyphs do not depend on fontconfig's choice; the CJK font likewise, when a scene asks for it.
struct Fonts {
    QString sans_family, cjk_family;
    std::string sans_missing;  // non-empty: DejaVu Sans was not found (a font_fallback issue), and why
    bool cjk_tried = false;
};

class Scene {
public:
    // Compile job->ops. Returns 0, ZK_EXIT_USAGE with the op path and key in err, or ZK_EXIT_SKIPPED with the
    // missing feature (and why) in err.
    int compile(const zk_job *job, Fonts *fonts, char *err, size_t errlen);
    // Clear to opaque white and draw frame `frame` onto the painter's device.
    void draw(QPainter &p, int frame, double complexity, zk_counts *counts);
    // The backend's read of what is drawn so far inside a device rectangle, premultiplied (backdrop_blur).
    std::function<QImage(QPainter &, const QRect &)> grab;
    // Whether the paint engine draws rect's multiply and screen blends (Qt's OpenGL engine does not here).
    bool advanced_blends = true;
    Scene();
    ~Scene();

private:
    Nodes root_;
    int width_ = 0, height_ = 0;
    void draw_nodes(QPainter &p, const Nodes &nodes, FrameState &st);
    void draw_node(QPainter &p, Node &n, FrameState &st);
};

// The scene's text font: sans, or the CJK font (the same paths and variable as the reference runner).
bool load_fonts(Fonts *fonts, bool cjk, std::string *why);

}  // namespace zqt

#endif
