#include "qt_app.h"

#include <cstdio>
#include <cstdlib>

namespace zqt {

QGuiApplication *app(const char *platform) {
    static int argc = 1;
    static char name[] = "zbench-qt";
    static char *argv[] = {name, nullptr};
    static QGuiApplication *instance = nullptr;
    if (!instance) {
        setenv("QT_QPA_PLATFORM", platform, 0);
        // Qt's warnings go to stderr, which the host keeps as the runner's log; stdout is the protocol's.
        instance = new QGuiApplication(argc, argv);
    }
    return instance;
}

const char *libraries_json() {
    static char json[64];
    snprintf(json, sizeof json, "\"qt\": \"%s\"", qVersion());
    return json;
}

}  // namespace zqt
