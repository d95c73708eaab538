// The process itself, before any window: how OpenMP's workers wait.
#pragma once

namespace attnviz::platform {

// OpenMP's worker threads (libgomp) spin for milliseconds after each parallel region before they
// sleep, which in a window takes the cores from the software rasterizer and its own threads:
// updating a 2048-token heatmap took 8.4 ms with spinning workers and 4.6 ms with sleeping ones
// (bench/bench_heatmap_gl.cpp). The policy is read when the runtime loads, before main, so this
// starts the process again with OMP_WAIT_POLICY=passive; call it before the window opens, with
// main's argv (the new process parses the same flags and comes back here with the policy set). A
// policy the user set is kept; if the restart fails the program goes on as it is. Without a window
// the spin is what is wanted: a pass's many short regions would wake sleeping workers each time.
void preferSleepingWorkers(char** argv);

}  // namespace attnviz::platform
