# net/route: ECMP / ideal-spray / single-path routing and ECMP collision statistics
# (paths relative to src/net).
list(APPEND NET_SOURCES
  route/router.cpp
  route/ecmp_stats.cpp)
