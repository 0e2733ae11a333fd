// What both Qt backends share beyond the scene: the application object Qt's fonts need, and the probe's
// library versions. Qt runs headless: no display server (docs/native-runner.md, "Porting an engine" / "Qt 6").
#ifndef ZBENCH_QT_APP_H
#define ZBENCH_QT_APP_H

#include <QGuiApplication>

namespace zqt {

// The one QGuiApplication of the process, created on first use on the platform plugin `platform` (offscreen
// for the raster backend, eglfs on a surfaceless EGL display for gles2) unless QT_QPA_PLATFORM says otherwise.
QGuiApplication *app(const char *platform);

// "\"qt\": \"6.4.2\"": machine.libraries of the probe.
const char *libraries_json();

}  // namespace zqt

#endif
