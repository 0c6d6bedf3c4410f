# Thin wrappers around cargo and vramfit; see README.md.
VRAMFIT = cargo run --release --quiet --
RAW = $(wildcard measurements/raw/*.csv)

.PHONY: build test lint ingest fit bench mutants ci

build:
	cargo build --release

test:
	cargo test --release

lint:
	cargo fmt --all -- --check
	cargo clippy --all-targets -- -D warnings

# Rebuild measurements/vae.json from measurements/raw/.
ingest:
	$(VRAMFIT) ingest $(RAW)

# Re-ingest the raw measurements and re-emit fits/vae.json (emit writes the
# Python package's copy, python/vramfit/vae.json, beside it).
fit: ingest
	$(VRAMFIT) emit

bench:
	cargo bench --bench fit
	cargo bench --bench phases

ci:
	bash .ci/run

# Mutation testing of the fit and verify modules (cargo install cargo-mutants).
mutants:
	cargo mutants --no-shuffle
