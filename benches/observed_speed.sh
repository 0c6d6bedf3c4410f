#!/usr/bin/env bash
# Issue 61's scale figures: `ingest` and `report --observed` on N observed
# rows (benches/observed_rows.py: rows as a host's Observer writes them, ten
# metadata columns each) beside `fit` on an N-point store (the synthetic
# file of ../shared/bench/synth.py, as benches/speed.sh makes it), whole
# processes, in one run, on the dist binary.
#
#   bash benches/observed_speed.sh [N]        (default: 1000000)
#
# Needs hyperfine, GNU time (/usr/bin/time) and python3. Prints a Markdown
# table: median wall time (hyperfine) and peak memory (max RSS).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bench=${VRAMFIT_PEER_DIR:-$repo/../shared/bench}
n=${1:-1000000}
cargo build --profile dist --quiet --manifest-path "$repo/Cargo.toml"
bin=$repo/target/dist/vramfit
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
runs=$([ "$n" -ge 1000000 ] && echo 3 || echo 10)

median() { # hyperfine's median of one command, in seconds
  hyperfine -N --runs "$runs" --warmup 1 -i --export-json "$work/h.json" "$@" >/dev/null 2>&1
  python3 -c "import json; print('%.3f' % json.load(open('$work/h.json'))['results'][0]['median'])"
}
peak() { # max RSS of one run, MiB (the command may exit 1 on findings)
  { /usr/bin/time -f %M "$@" 2>&1 >/dev/null || true; } | tail -1 | awk '{printf "%d", $1/1024}'
}

# The N-point store `fit` runs on: the shipped policy without the entries
# that name shipped points, the synthetic rows ingested.
synth=$work/synth
mkdir -p "$synth/fits"
python3 - "$repo/fits/policy.toml" "$synth/fits/policy.toml" <<'EOF'
import sys
text = open(sys.argv[1]).read()
blocks = [b for b in text.split("\n\n") if not b.startswith(("[[exclude]]", "[[keep]]", "[[exception]]"))]
open(sys.argv[2], "w").write("\n\n".join(blocks))
EOF
python3 "$bench/synth.py" "$n" 96 "$work/synth.csv" >/dev/null
"$bin" --root "$synth" ingest "$work/synth.csv" >/dev/null 2>&1

# The observed rows, against a copy of the shipped root.
python3 "$repo/benches/observed_rows.py" "$n" "$work/observed.csv"
root=$work/root
mkdir -p "$root"
cp -r "$repo/fits" "$repo/measurements" "$root/"

fit_t=$(median "$bin --root $synth fit")
fit_m=$(peak "$bin" --root "$synth" fit)
report_t=$(median "$bin --root $root report --observed $work/observed.csv")
report_m=$(peak "$bin" --root "$root" report --observed "$work/observed.csv")
# ingest into the shipped store each run (it is put back before each).
cp "$root/measurements/vae.json" "$work/store.json"
ingest_t=$(median --prepare "cp $work/store.json $root/measurements/vae.json" \
  "$bin --root $root ingest $work/observed.csv")
cp "$work/store.json" "$root/measurements/vae.json"
ingest_m=$(peak "$bin" --root "$root" ingest "$work/observed.csv")

echo "machine: $(nproc) cores, $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo), $(uname -sr)"
echo
echo "| rows | command | time | peak | time ÷ fit's |"
echo "|---|---|---|---|---|"
echo "| $n (store) | \`fit\` | $fit_t s | $fit_m MiB | 1.0× |"
for row in "report --observed|$report_t|$report_m" "ingest|$ingest_t|$ingest_m"; do
  IFS='|' read -r cmd t m <<<"$row"
  echo "| $n (observed) | \`$cmd\` | $t s | $m MiB | $(python3 -c "print('%.2f' % ($t / $fit_t))")× |"
done
