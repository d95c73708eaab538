#!/usr/bin/env bash
# The cost of opening a large attention file with attnviz --attention: peak resident memory
# (/usr/bin/time -v's "Maximum resident set size") and wall time of
#   1. --export-heatmap of one head of the last layer (reads that layer),
#   2. --export-model-view (every map, pooled to thumbnails),
#   3. --export-stats (every map's statistics),
#   4. the window's time to first frame (--screenshot under xvfb-run; the full check included),
# each run once with the file's pages evicted first (cold: read from the disk; without root, by
# POSIX_FADV_DONTNEED) and once right after (warm: from the page cache).
# Usage: bench/import_big.sh ATTNVIZ FILE.npy [OUT_DIR]
# Make the file with bench/make_attention_npy.py (32 x 32 x 2048^2 float32 = 16 GiB by default).
set -euo pipefail
attnviz=$1
file=$2
out=${3:-$(mktemp -d)}
mkdir -p "$out"
size=$(stat -c %s "$file")
echo "file: $file ($((size / 1024 / 1024)) MiB)"
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p') ($(nproc) cores), memory: $(free -g | awk '/Mem:/ {print $2}') GiB"
evict() { /usr/bin/python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$file"; }
measure() {  # name, command...
    local name=$1
    shift
    for cache in cold warm; do
        [[ $cache == cold ]] && evict
        /usr/bin/time -v "$@" > "$out/$name.$cache.out" 2> "$out/$name.$cache.time" || { echo "$name ($cache) failed:"; tail -5 "$out/$name.$cache.time"; return 1; }
        local rss wall
        rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$out/$name.$cache.time")
        wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$out/$name.$cache.time")
        printf '%-14s %-5s wall %-9s peak RSS %6d MiB\n' "$name" "$cache" "$wall" $((rss / 1024))
    done
}
layers=$(/usr/bin/python3 -c 'import numpy as np, sys; print(np.load(sys.argv[1], mmap_mode="r").shape[0])' "$file")
measure heatmap "$attnviz" --attention "$file" --layer $((layers - 1)) --head 0 --export-heatmap "$out/heatmap.png"
measure model-view "$attnviz" --attention "$file" --export-model-view "$out/model-view.png"
measure stats "$attnviz" --attention "$file" --export-stats "$out/stats.csv"
measure window xvfb-run -a -s "-screen 0 1920x1080x24" "$attnviz" --fresh --attention "$file" --screenshot "$out/window.png" --size 1920x1080
grep -h "first frame" "$out"/window.*.time "$out"/window.*.out 2>/dev/null || true
echo "outputs in $out"
