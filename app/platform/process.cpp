#include "app/platform/process.hpp"

#include <cstdlib>

#include <unistd.h>

namespace attnviz::platform {

void preferSleepingWorkers(char** argv) {
#if defined(_OPENMP) && defined(__linux__)
    if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0 || setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
    self[n] = '\0';
    execv(self, argv);  // by its own path, so that the process keeps its name
#else
    (void)argv;
#endif
}

}  // namespace attnviz::platform
