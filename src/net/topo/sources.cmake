# net/topo: Boost.Graph cluster fabric, its builders, summary and GraphViz output
# (paths relative to src/net).
list(APPEND NET_SOURCES
  topo/fabric.cpp
  topo/builder_common.cpp
  topo/topology_builders.cpp
  topo/topology_summary.cpp
  topo/write_dot.cpp)
