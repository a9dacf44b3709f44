# net/solver: max-min fair sharing and the flow network on the engine (paths relative to src/net).
list(APPEND NET_SOURCES solver/maxmin_solver.cpp solver/flow_network.cpp)
