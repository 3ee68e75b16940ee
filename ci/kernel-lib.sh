# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# ci/kernel-lib.sh - shared by the kernel scripts (kernels.sh, dkms-build.sh,
# vm/run.sh, kernel-tests.sh): where the kernel cache lives, what a prepared
# kernel looks like, apt with retries. Sourced, never run.
#
# The cache ($TB5_KCACHE, default /var/cache/tb5-ci) holds:
#   kernels/<label>.env   one per prepared kernel (labels: 6.1, 6.12, sid),
#                         written last, so its presence means "ready"
#   roots/<kver>/         the kernel image package(s) extracted with dpkg-deb
#   headers/<kver>/       headers extracted with dpkg-deb (6.12 only)
#   sid/                  the sid chroot that sid's module is built in
#   apt-bpo/              the private apt configuration of bookworm-backports

# shellcheck source=ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TB5_KCACHE=${TB5_KCACHE:-/var/cache/tb5-ci}
# shellcheck disable=SC2034  # used by the scripts that source this
TB5_KLABELS=(6.1 6.12 sid)

# Runs "$@" up to 4 times, 10 s apart: mirrors and apt locks held by other
# jobs on the same machine fail transiently.
tb5_retry() {
	local try
	for try in 1 2 3 4; do
		"$@" && return 0
		((try < 4)) || break
		echo "retrying in 10 s (attempt $try failed): $*" >&2
		sleep 10
	done
	return 1
}

# apt-get that waits for the dpkg lock (other jobs may be installing) and
# never asks questions.
tb5_apt_get() {
	env DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=600 "$@"
}

# The URI the host's apt uses for its own release (bookworm): the other
# suites are fetched from the same mirror. Works for both one-line and
# deb822 sources.
tb5_mirror() {
	local codename uri release

	# shellcheck source=/dev/null
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	[[ -n $codename ]] || tb5_die "cannot tell the host's release from /etc/os-release"
	# shellcheck disable=SC2016  # apt's format, not the shell's
	while read -r uri release; do
		if [[ $release == "$codename" ]]; then
			echo "${uri%/}"
			return 0
		fi
	done < <(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' \
		'Identifier: Packages')
	tb5_die "no apt source for '$codename' in the host's apt configuration"
}

# tb5_kernel_env LABEL: loads kernels/LABEL.env into the TB5_K_* variables.
#   TB5_K_LABEL   6.1 | 6.12 | sid
#   TB5_K_VER     the kernel release (uname -r in the VM)
#   TB5_K_ROOT    extracted image: vmlinuz and lib/modules/$TB5_K_VER
#   TB5_K_BUILD   the kernel build directory, as seen where modules are built
#                 (inside the chroot for sid)
#   TB5_K_HEADERS extracted headers root (6.12), empty when installed
#   TB5_K_CHROOT  chroot to build in (sid), empty for the host
tb5_kernel_env() {
	local env=$TB5_KCACHE/kernels/$1.env

	[[ -f $env ]] || tb5_die "kernel '$1' is not prepared ($env missing): run ci/kernels.sh"
	# shellcheck disable=SC2034  # read by the callers
	TB5_K_LABEL='' TB5_K_VER='' TB5_K_ROOT='' TB5_K_BUILD='' TB5_K_HEADERS='' TB5_K_CHROOT=''
	# shellcheck source=/dev/null
	source "$env"
}

# tb5_kernel_image ROOT: prints the vmlinuz inside an extracted image root.
# Debian 12 and bookworm-backports install boot/vmlinuz-<kver>; sid's
# linux-binary package holds usr/lib/modules/<kver>/vmlinuz.
tb5_kernel_image() {
	local f
	for f in "$1"/boot/vmlinuz-* "$1"/usr/lib/modules/*/vmlinuz \
		"$1"/lib/modules/*/vmlinuz; do
		[[ -f $f ]] && { echo "$f"; return 0; }
	done
	return 1
}

# tb5_kernel_moddir ROOT: prints lib/modules/<kver> inside an image root
# (usr/lib/modules on merged-/usr packages).
tb5_kernel_moddir() {
	local d
	for d in "$1"/lib/modules/* "$1"/usr/lib/modules/*; do
		[[ -f $d/modules.order ]] && { echo "$d"; return 0; }
	done
	return 1
}

# tb5_timed NAME COMMAND...: one step of a package test under a banner
# ("<script>: NAME"), its time kept in TB5_STEP_TIMES for the script's
# summary.
TB5_STEP_TIMES=()
tb5_timed() {
	local name=$1 start=$SECONDS
	shift
	tb5_banner "$(basename "$0" .sh): $name"
	"$@"
	TB5_STEP_TIMES+=("$(printf '  %-48s %s' "$name" "$(tb5_fmt_secs $((SECONDS - start)))")")
}

# tb5_chroot DIR COMMAND...: runs COMMAND in the chroot DIR with a clean
# environment, /proc mounted (objtool reads the stack limit from it; dpkg
# scripts want it) and a /dev/pts of its own (apt logs through a pty), in a
# private mount namespace: the mounts go away with the command and never show
# on the host.
tb5_chroot() {
	# shellcheck disable=SC2016  # the inner shell expands them
	unshare -m --propagation private -- sh -c '
		mount -t proc proc "$1/proc" || exit
		mount -t devpts -o newinstance,ptmxmode=0666 devpts "$1/dev/pts" || exit
		root=$1
		shift
		exec chroot "$root" /usr/bin/env -i HOME=/root LC_ALL=C.UTF-8 \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
	' tb5-chroot "$@"
}
