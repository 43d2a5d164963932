#!/usr/bin/env bash
# plan.sh SRC PLAN — the dependency-caching input of the Dockerfiles (what cargo-chef would do,
# in 30 lines of shell): copies into PLAN only what decides which dependencies get compiled —
# the workspace Cargo.toml and Cargo.lock, every member's Cargo.toml and build.rs, and proto/
# (read by fedsearch-proto's build.rs) — and replaces every Rust target root with a stub.
# Building PLAN compiles all third-party crates; the layer is reused until a manifest, the lock
# file, a build script or a .proto changes. Runs inside the builder image (bash, find, grep).
set -euo pipefail
src=${1:?usage: plan.sh SRC PLAN}
plan=${2:?usage: plan.sh SRC PLAN}
mkdir -p "$plan"
cp "$src/Cargo.toml" "$src/Cargo.lock" "$plan/"
for f in rust-toolchain rust-toolchain.toml .cargo/config.toml; do
  [ -f "$src/$f" ] && install -D -m 0644 "$src/$f" "$plan/$f"
done
[ -d "$src/proto" ] && cp -r "$src/proto" "$plan/proto"

stub() {  # stub FILE: a library root stays empty, every other target root gets an empty main
  mkdir -p "$(dirname "$1")"
  case $1 in
    */src/lib.rs) : >"$1" ;;
    *) echo 'fn main() {}' >"$1" ;;
  esac
}

for manifest in "$src"/crates/*/Cargo.toml; do
  dir=$(dirname "$manifest"); name=$(basename "$dir"); out=$plan/crates/$name
  mkdir -p "$out"
  cp "$manifest" "$out/Cargo.toml"
  [ -f "$dir/build.rs" ] && cp "$dir/build.rs" "$out/build.rs"
  # target roots found by cargo's auto-discovery, and the ones a manifest names with `path = "..."`
  while IFS= read -r root; do
    stub "$out/$root"
  done < <(
    cd "$dir"
    find src/lib.rs src/main.rs src/bin benches examples tests -maxdepth 2 \
      \( -path 'src/lib.rs' -o -path 'src/main.rs' -o -name '*.rs' \) -type f 2>/dev/null \
      | grep -E '^(src/(lib|main)\.rs|(src/bin|benches|examples|tests)/[^/]+\.rs|(src/bin|benches|examples|tests)/[^/]+/main\.rs)$' || true
    sed -n 's/^[[:space:]]*path[[:space:]]*=[[:space:]]*"\([^"]*\.rs\)".*/\1/p' Cargo.toml
  )
done
