# net/topo tests (paths relative to tests/unit/net).
list(APPEND NET_TESTS topo_builders_test.cpp topo_summary_test.cpp topo_nvlink_domain_test.cpp)
