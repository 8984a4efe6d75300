# shellcheck shell=bash
# scripts/lib/apt.sh: installing Debian packages for the test command. Source it; it only
# defines things.
#
#   apt_install PACKAGE...   installs them with apt-get (as root; otherwise says what to
#                            install and fails), without recommended extras, waiting up to
#                            5 minutes for another apt to finish; its output goes to stderr.
#                            apt-get update runs first unless EXECSTORE_APT_UPDATED says this run
#                            updated the lists already (prefetch.sh).

apt_install() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "apt.sh: $* missing and not root: install them (apt-get install $*)" >&2
		return 1
	fi
	printf '    installing %s from Debian'"'"'s packages\n' "$*" >&2
	if [ -z "${EXECSTORE_APT_UPDATED:-}" ]; then
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || return 1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			-o DPkg::Lock::Timeout=300 "$@" >&2
}
