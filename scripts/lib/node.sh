# shellcheck shell=bash
# scripts/lib/node.sh: the Node the npm package's build and the browser tests need. Source it;
# it only defines things.
#
#   node_require MAJOR WHO   fails, saying that WHO needs it, unless `node` (at least major
#                            version MAJOR) and `npm` are on PATH.

node_require() {
	local min=$1 who=$2 major
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
		echo "node.sh: node and npm (Node >= $min) are needed for $who" >&2
		return 1
	fi
	major=$(node -p 'process.versions.node.split(".")[0]')
	if [ "$major" -lt "$min" ]; then
		echo "node.sh: Node $(node --version) is too old: $who needs >= $min" >&2
		return 1
	fi
}
