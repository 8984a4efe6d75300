# shellcheck shell=bash
# scripts/lib/cargo.sh: where cargo puts what it builds. Source it; it only defines things.
#
#   cargo_target_dir   cargo's target directory for this workspace, as `cargo metadata`
#                      reports it (CARGO_TARGET_DIR, a config's build.target-dir, or target/),
#                      so a binary is looked for where cargo built it. Needs node (to read
#                      the JSON), as every caller does.

cargo_target_dir() {
	cargo metadata --format-version 1 --no-deps |
		node -p 'JSON.parse(require("fs").readFileSync(0, "utf8")).target_directory'
}
