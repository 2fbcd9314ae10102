#!/usr/bin/env bash
# How heavy a run's report.html is: its size, and how long headless Chromium takes to load it
# (the page's own navigation timing, start → end of the load event, every inline image decoded),
# the median of LOADS loads (5 unless given), each in a fresh browser profile.
# Usage: benches/report-load.sh RUN_DIR [LOADS]
# Needs Chromium (apt-get install chromium), or LOCKBENCH_CHROMIUM naming its executable.
set -euo pipefail
run=${1:?usage: benches/report-load.sh RUN_DIR [LOADS]}
loads=${2:-5}
report="$run/report.html"
[ -f "$report" ] || { echo "no report.html in $run (lockbench report $run draws it)" >&2; exit 2; }
chromium=${LOCKBENCH_CHROMIUM:-}
if [ -z "$chromium" ]; then
  for name in chromium chromium-browser; do
    if command -v "$name" >/dev/null; then chromium=$name; break; fi
  done
fi
if [ -z "$chromium" ] || ! command -v "$chromium" >/dev/null; then
  echo "needs Chromium${chromium:+ (not found: $chromium)}: apt-get install chromium, or set LOCKBENCH_CHROMIUM to its executable" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The probe goes first in <head>; after the load event ends it writes the timing into the page,
# which --dump-dom prints.
probe='<script>window.addEventListener("load",function(){setTimeout(function(){var n=performance.getEntriesByType("navigation")[0];var p=document.createElement("pre");p.id="load-ms";p.textContent=(n.loadEventEnd-n.startTime).toFixed(1);document.body.appendChild(p);},0);});</script>'
python3 - "$report" "$work/page.html" "$probe" <<'EOF'
import sys
src, dst, probe = sys.argv[1:]
html = open(src, encoding="utf-8").read()
open(dst, "w", encoding="utf-8").write(html.replace("<head>", "<head>\n" + probe, 1))
EOF

times=()
for i in $(seq 1 "$loads"); do
  dom=$(timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --no-first-run --window-size=1400,2000 --user-data-dir="$work/profile-$i" \
    --dump-dom "file://$work/page.html" 2>/dev/null) || { echo "chromium failed on load $i" >&2; exit 1; }
  ms=$(sed -n 's/.*<pre id="load-ms">\([0-9.]*\)<\/pre>.*/\1/p' <<<"$dom")
  [ -n "$ms" ] || { echo "load $i: the probe wrote no timing" >&2; exit 1; }
  times+=("$ms")
done
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}')
bytes=$(stat -c %s "$report")
images=$({ grep -o 'data:image/[a-z+]*' "$report" || true; } | sort | uniq -c | awk '{printf "%s%s %s", sep, $1, $2; sep=", "}')
echo "report.html: $bytes bytes ($(awk -v b="$bytes" 'BEGIN {printf "%.2f", b / 1048576}') MB; images: ${images:-none})"
echo "load in headless Chromium (navigation start → load event end): median ${median} ms of $loads (${times[*]} ms)"
