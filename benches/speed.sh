#!/usr/bin/env bash
# The README's speed table: vramfit's ingest, emit, fit and verify against
# the scipy peer, whole process, on the same synthetic file, in one run.
#
#   bash benches/speed.sh [N ...]        (default: 100000 1000000)
#
# Needs hyperfine, GNU time (/usr/bin/time), python3 with numpy and scipy,
# and ../shared/bench/ (synth.py, peer_scipy.py) beside the repository.
# Prints a Markdown table: median wall time (hyperfine) and peak memory
# (max RSS, GNU time) of each command.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bench=${VRAMFIT_PEER_DIR:-$repo/../shared/bench}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(100000 1000000)
# The shipped binary: the dist profile (fat LTO, one codegen unit).
cargo build --profile dist --quiet --manifest-path "$repo/Cargo.toml"
bin=$repo/target/dist/vramfit
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

median() { # hyperfine's median of one command, in seconds
  hyperfine -N --runs "$runs" --warmup 1 -i --export-json "$work/h.json" "$@" >/dev/null 2>&1
  python3 -c "import json; print('%.3f' % json.load(open('$work/h.json'))['results'][0]['median'])"
}
peak() { # max RSS of one run, MiB (the command may exit 1 on findings)
  { /usr/bin/time -f %M "$@" 2>&1 >/dev/null || true; } | tail -1 | awk '{printf "%d", $1/1024}'
}

echo "machine: $(nproc) cores, $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo), $(uname -sr)"
echo
echo "| points | command | vramfit | peak | scipy peer | peak | peer ÷ vramfit |"
echo "|---|---|---|---|---|---|---|"
for n in "${sizes[@]}"; do
  runs=$([ "$n" -ge 1000000 ] && echo 3 || echo 10)
  root=$work/root-$n
  mkdir -p "$root/fits"
  # The shipped policy without the entries that name shipped points (excluded, kept, excepted).
  python3 - "$repo/fits/policy.toml" "$root/fits/policy.toml" <<'EOF'
import sys
text = open(sys.argv[1]).read()
blocks = [b for b in text.split("\n\n") if not b.startswith(("[[exclude]]", "[[keep]]", "[[exception]]"))]
open(sys.argv[2], "w").write("\n\n".join(blocks))
EOF
  csv=$work/synth-$n.csv
  python3 "$bench/synth.py" "$n" 96 "$csv" >/dev/null
  peer_t=$(median "python3 $bench/peer_scipy.py $csv")
  peer_m=$(peak python3 "$bench/peer_scipy.py" "$csv")
  # ingest into an empty store each run; then emit (--force: the synthetic
  # noise puts points over the ratio bound), fit and verify on that store.
  ingest_t=$(median --prepare "rm -rf $root/measurements" "$bin --root $root ingest $csv")
  rm -rf "$root/measurements"
  ingest_m=$(peak "$bin" --root "$root" ingest "$csv")
  for cmd in ingest "emit --force" fit verify; do
    case $cmd in
      ingest) t=$ingest_t; m=$ingest_m ;;
      *) t=$(median "$bin --root $root $cmd"); m=$(peak "$bin" --root "$root" $cmd) ;;
    esac
    ratio=$(python3 -c "print('%.1f' % ($peer_t / $t))")
    echo "| $n | \`$cmd\` | $t s | $m MiB | $peer_t s | $peer_m MiB | $ratio× |"
  done
done
