# workload: pure builder of a step's task graph (paths relative to src/workload).
list(APPEND WORKLOAD_SOURCES schedule.cpp merged_pairs.cpp task_graph.cpp)
