# shellcheck shell=bash
# scripts/lib/cargo.sh: where cargo puts what it builds. Source it; it only defines things.
#
#   cargo_target_dir   cargo's target directory for this workspace, as `cargo metadata`
#                      reports it (CARGO_TARGET_DIR, a config's build.target-dir, or target/),
#                      so a binary is looked for where cargo built it. Needs node (to read
#                      the JSON), as every caller does.
#   native_cli         (below)

cargo_target_dir() {
	cargo metadata --format-version 1 --no-deps |
		node -p 'JSON.parse(require("fs").readFileSync(0, "utf8")).target_directory'
}

#   native_cli         builds `execstore` (the CLI) the way `cargo test --workspace` builds it and
#                      prints its path. The same command, so every shared dependency has the
#                      same features: after the test step it is a no-op. `cargo build -p
#                      execstore-cli` resolves other features (tokio without io-std, serde
#                      without alloc, syn with fewer) and rebuilt about 200 crates a second time.
native_cli() {
	cargo test --workspace --no-run --quiet >&2 || return 1
	printf '%s/debug/execstore\n' "$(cargo_target_dir)"
}
