# workload: pure builder of a step's task graph (paths relative to src/workload).
list(APPEND WORKLOAD_SOURCES schedule.cpp task_graph.cpp)
