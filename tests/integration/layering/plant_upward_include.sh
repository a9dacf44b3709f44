#!/usr/bin/env bash
# The layering check must catch what it exists for: copy the module tree, plant an include of
# a higher module (cli) into the lowest one (core), and expect scripts/check-layering.py to fail
# naming the edge.
#   tests/integration/layering/plant_upward_include.sh REPO_ROOT
set -euo pipefail
repo=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/megasim-layering.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$repo/CMakeLists.txt" "$work/"
cp -r "$repo/src" "$repo/include" "$work/"
python3 "$repo/scripts/check-layering.py" "$work" >/dev/null   # the copy itself passes
printf '#include "cli/commands.hpp"\n' >> "$work/src/core/error.cpp"
if out=$(python3 "$repo/scripts/check-layering.py" "$work"); then
  echo "FAIL: a planted upward include core -> cli passed the check" >&2
  exit 1
fi
grep -q "upward include: core -> cli" <<<"$out" || { echo "FAIL: the report does not name core -> cli:" >&2; echo "$out" >&2; exit 1; }
grep -q "include cycle" <<<"$out" || { echo "FAIL: the cycle core -> cli -> ... -> core is not reported:" >&2; echo "$out" >&2; exit 1; }
echo "layering check caught the planted include"
