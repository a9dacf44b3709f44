#include <iostream>

#include "run_cli.hpp"

int main(int argc, char** argv) { return megasim::run_cli(argc, argv, std::cout, std::cerr); }
