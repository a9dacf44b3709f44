# Discrete-event step executor (helper "des"); appended to EXEC_SOURCES by CMakeLists.txt.
list(APPEND EXEC_SOURCES des_step.cpp des_executor.cpp des_breakdown.cpp des_ecmp.cpp ep_fabric.cpp trace_writer.cpp)
