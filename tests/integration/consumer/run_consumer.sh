#!/usr/bin/env bash
# Installs this build of megasim to a temporary prefix, moves the prefix (the package must be
# relocatable), then configures, builds and runs tests/integration/consumer/project against it with
# find_package(megasim CONFIG REQUIRED), as an outside tool would.
#   tests/integration/consumer/run_consumer.sh BUILD_DIR PROJECT_DIR SANITIZE(0|1) CXX_COMPILER
set -euo pipefail
build=$1 project=$2 sanitize=$3 cxx=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/megasim-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/staging" >/dev/null
mv "$work/staging" "$work/prefix"
flags=""
# A sanitizer build's libraries need the sanitizer runtime in the consumer's link too.
[ "$sanitize" = 1 ] && flags="-fsanitize=address,undefined"
cmake -S "$project" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >/dev/null
cmake --build "$work/build" >/dev/null
env -u MEGASIM_CATALOG_DIR "$work/build/megasim_consumer" "$work/prefix"
