# net/solver tests (paths relative to tests/unit/net).
list(APPEND NET_TESTS solver_maxmin_test.cpp solver_maxmin_property_test.cpp solver_flow_network_test.cpp)
