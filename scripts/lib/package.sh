# shellcheck shell=bash
# scripts/lib/package.sh: the crates as crates.io would take them. Source it; it only defines
# things. scripts/test calls:
#
#   package_crates   `cargo package --locked` of every workspace crate not marked
#                    `publish = false` (cargo >= 1.90 resolves their dependencies on each
#                    other from the packages just made, as crates.io would after publishing
#                    them in order), which builds each package on its own: the check that
#                    `cargo publish` makes before uploading. Then, for each `.crate`: its size,
#                    and that it holds README.md, LICENSE-MIT and LICENSE-APACHE; the CLI's
#                    also the monitor UI it embeds (web/). Last, the CLI's quick start (README,
#                    Install and Quick start) with the binary the verification just built
#                    from the packaged sources: `demo --no-serve`, then `list` on its file.
#
# The verification builds into the workspace's target directory (debug profile): warm, it
# recompiles only the seven packaged crates (about a minute); cold, it also compiles their
# dependencies once per crate's own feature set.
#
# Environment:
#   EXECSTORE_SKIP_PACKAGE   a reason: package_crates says so and does nothing

# shellcheck source=cargo.sh
. "$(dirname "${BASH_SOURCE[0]}")/cargo.sh"

_package_say() { printf '    %s\n' "$*"; }

# The workspace members cargo would publish (no `publish = false`), one name a line.
package_published() {
	cargo metadata --format-version 1 --no-deps |
		node -e '
			const m = JSON.parse(require("fs").readFileSync(0, "utf8"));
			for (const p of m.packages) if (p.publish === null) console.log(p.name);
		'
}

# Forgets what an earlier `cargo package` on this machine left of these crates. Cargo unpacks
# each package a verification builds against into $CARGO_HOME/registry/src/-<hash>/NAME-VERSION
# (a registry of the packages just made, named by no host, hence the leading `-`), reuses that
# directory while it exists, and never looks at a registry package's sources again once built:
# with the version unchanged, a later run would verify the next crate against the last run's
# package. So where such a directory is found, it goes, with what cargo built of these crates
# (`cargo clean -p`, every source alike; the verification builds them again in any case).
# Directories of crates.io and other named registries are left alone. A fresh machine (CI) has
# neither, and nothing is cleaned.
package_forget_unpacked() {
	local home=${CARGO_HOME:-$HOME/.cargo} name stale=()
	for name in "$@"; do
		compgen -G "$home/registry/src/-*/$name-[0-9]*" >/dev/null && stale+=("$name")
	done
	[ ${#stale[@]} -gt 0 ] || return 0
	_package_say "an earlier run's packages of ${stale[*]}: unpacked sources and builds removed"
	for name in "${stale[@]}"; do
		rm -rf "$home"/registry/src/-*/"$name"-[0-9]*
		cargo clean --quiet -p "$name" || return 1
	done
}

package_crates() {
	if [ -n "${EXECSTORE_SKIP_PACKAGE:-}" ]; then
		_package_say "skipped: $EXECSTORE_SKIP_PACKAGE"
		return 0
	fi
	local crates=() args=() name target dir started rc=0
	mapfile -t crates < <(package_published) || return 1
	[ ${#crates[@]} -gt 0 ] || { echo "error: no publishable crate found" >&2; return 1; }
	for name in "${crates[@]}"; do args+=(-p "$name"); done
	target=$(cargo_target_dir) || return 1
	dir=$(mktemp -d "${TMPDIR:-/tmp}/execstore-package.XXXXXX") || return 1
	touch "$dir/.started"
	started=$SECONDS
	package_forget_unpacked "${crates[@]}" || { rm -rf "$dir"; return 1; }
	_package_say "cargo package --locked ${args[*]}"
	cargo package --locked "${args[@]}" || { rm -rf "$dir"; return 1; }
	_package_say "packed and verified ${#crates[@]} crates in $((SECONDS - started)) s"
	local version file listing want
	for name in "${crates[@]}"; do
		version=$(cargo metadata --format-version 1 --no-deps |
			node -e 'const m = JSON.parse(require("fs").readFileSync(0, "utf8"));
				console.log(m.packages.find((p) => p.name === process.argv[1]).version)' "$name")
		file="$target/package/$name-$version.crate"
		[ -f "$file" ] || { echo "error: $file was not made" >&2; rc=1; continue; }
		listing=$(tar -tzf "$file") || { rc=1; continue; }
		want=(README.md LICENSE-MIT LICENSE-APACHE Cargo.toml)
		[ "$name" = execstore-cli ] && want+=(web/index.html web/app.js web/views/index.js web/vendor/dagre.esm.js)
		for w in "${want[@]}"; do
			grep -qx "$name-$version/$w" <<<"$listing" ||
				{ echo "error: $name-$version.crate lacks $w" >&2; rc=1; }
		done
		_package_say "$(printf '%-34s %4d KiB, %3d files' "$name-$version.crate" \
			"$(($(stat -c %s "$file") / 1024))" "$(wc -l <<<"$listing")")"
	done
	# The CLI the verification built from its package (it replaces the workspace's debug
	# binary: the same sources, packaged): its quick start, in a fresh folder.
	local cli="$target/debug/execstore"
	if printf '%s\n' "${crates[@]}" | grep -qx execstore-cli; then
		if ! [ "$cli" -nt "$dir/.started" ]; then
			echo "error: the verification did not build $cli" >&2
			rc=1
		elif ! (cd "$dir" && "$cli" demo --no-serve --executions 40 >demo.out 2>&1 &&
			"$cli" --db execstore-demo.db list --status RUNNING >list.out 2>&1 &&
			grep -q RUNNING list.out); then
			echo "error: the packaged CLI's quick start failed:" >&2
			cat "$dir"/demo.out "$dir"/list.out >&2 2>/dev/null
			rc=1
		else
			_package_say "packaged CLI: demo --no-serve, then list --status RUNNING: $(($(wc -l <"$dir/list.out") - 1)) rows"
		fi
	fi
	rm -rf "$dir"
	return "$rc"
}
