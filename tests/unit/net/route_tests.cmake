# net/route tests (paths relative to tests/unit/net).
list(APPEND NET_TESTS route_router_test.cpp route_ecmp_stats_test.cpp)
