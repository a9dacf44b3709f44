# DES executor tests (helper "des"): include from tests/unit/exec/CMakeLists.txt.
megasim_test(megasim_des_tests
  SOURCES des_step_test.cpp des_dp_test.cpp des_fold_test.cpp des_trace_test.cpp
  DEPS megasim_exec nlohmann_json::nlohmann_json)
