#!/usr/bin/env bash
# Renders a megasim report.html in headless Debian chromium and checks that it really draws:
#   - the page's inline self-check (every <svg class="chart"> has a non-empty box and drawn
#     marks) wrote "megasim-report-ok" into document.title, read back with --dump-dom;
#   - the expected number of charts is present;
#   - no uncaught script error or console error was logged;
#   - a full-page screenshot was produced and is not trivially small.
#   scripts/chromium-check.sh REPORT.html [EXPECTED_CHARTS]
# Exit codes: 0 ok, 1 check failed, 77 chromium is not installed (ctest SKIP_RETURN_CODE).
set -euo pipefail
html=$(realpath "$1")
expected=${2:-}
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIP: chromium not installed (apt-get install chromium)" >&2
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
       --disable-background-networking --disable-component-update --disable-sync
       --disable-dev-shm-usage --virtual-time-budget=5000 --enable-logging=stderr --v=0)

timeout 120 "$browser" "${flags[@]}" --user-data-dir="$work/profile-dom" --dump-dom "file://$html" \
  >"$work/dom.html" 2>"$work/dom.log" || { echo "FAIL: chromium --dump-dom failed" >&2; cat "$work/dom.log" >&2; exit 1; }
timeout 120 "$browser" "${flags[@]}" --user-data-dir="$work/profile-shot" --window-size=1280,4000 \
  --screenshot="$work/shot.png" "file://$html" >"$work/shot.out" 2>"$work/shot.log" \
  || { echo "FAIL: chromium --screenshot failed" >&2; cat "$work/shot.log" >&2; exit 1; }

title=$(grep -o '<title>[^<]*</title>' "$work/dom.html" | head -1 || true)
echo "page title: $title"
case "$title" in
  *megasim-report-ok*) ;;
  *) echo "FAIL: the page's self-check did not pass: $title" >&2; exit 1 ;;
esac
if [ -n "$expected" ] && ! grep -q "charts=$expected<" <<<"$title"; then
  echo "FAIL: expected $expected charts: $title" >&2
  exit 1
fi
if grep -hE 'Uncaught|CONSOLE.*[Ee]rror|:ERROR:CONSOLE' "$work/dom.log" "$work/shot.log"; then
  echo "FAIL: console errors while rendering" >&2
  exit 1
fi
size=$(stat -c %s "$work/shot.png" 2>/dev/null || echo 0)
if [ "$size" -lt 20000 ]; then
  echo "FAIL: screenshot missing or nearly blank ($size bytes)" >&2
  exit 1
fi
echo "ok: charts render in chromium ($size-byte screenshot)"
