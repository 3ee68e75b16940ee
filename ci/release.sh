#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ci/release.sh [--out DIR] [--uri URI] [--also DEB-DIR]... - tb5's signed apt
# repository, made from the debs of ci/package.sh deb (build-pkg-deb/packages):
#
#   DIR/gnupg/        the release key (a GNUPGHOME made at the first run,
#                     gpg --batch, no passphrase: CI's key, never committed;
#                     kept for later runs, removed with DIR)
#   DIR/apt/          the repository, served as it is by any web server:
#     dists/bookworm/Release, InRelease, Release.gpg
#                     made by apt-ftparchive, signed with the release key
#                     (clearsigned and detached, SHA512)
#     dists/bookworm/main/binary-amd64/Packages(.gz)
#     pool/main/      the debs, and tb5-archive-keyring
#     tb5-archive-keyring.deb
#                     the public half of the key as a deb, at a stable name
#                     (/usr/share/keyrings/tb5-archive-keyring.gpg)
#     tb5-archive-keyring.asc, FINGERPRINT
#                     the public key, armored, and its fingerprint (to check
#                     the keyring out of band)
#     tb5.sources     the deb822 sources file for /etc/apt/sources.list.d/,
#                     URIs: URI (default https://tb5.example.org/apt),
#                     Signed-By: /usr/share/keyrings/tb5-archive-keyring.gpg
#
#   DIR/rpm/          with --rpm (the rpms of ci/package.sh rpm,
#                     build-pkg-rpm/packages): a dnf repository, each rpm
#                     signed with the same key (rpmsign --addsign),
#                     repodata/ by createrepo_c with repomd.xml.asc (a
#                     detached signature), RPM-GPG-KEY-tb5 and tb5.repo
#                     (gpgcheck=1, repo_gpgcheck=1)
#
# --also DEB-DIR adds more debs to the pool (ci/package-install.sh --full:
# the previous release's, so that the upgrade comes from the same signed
# repository). Needs gpg, apt-utils (apt-ftparchive), dpkg-dev; lintian
# over the keyring deb when TB5_RELEASE_LINT=1 (ci/package.sh lint covers
# the others).
set -euo pipefail
# shellcheck source=ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TB5_ROOT"

OUT=$TB5_ROOT/build-release
URI=https://tb5.example.org/apt
ALSO=()
DEBS=$TB5_ROOT/build-pkg-deb/packages
RPMS=$TB5_ROOT/build-pkg-rpm/packages
RPM=0
SUITE=bookworm
KEY_NAME="tb5 release signing key (CI) <tb5@tb5.invalid>"

while (($#)); do
	case $1 in
	--out) OUT=$(realpath -m "$2"); shift ;;
	--uri) URI=$2; shift ;;
	--also) ALSO+=("$(realpath "$2")"); shift ;;
	--rpm) RPM=1 ;;
	*) tb5_die "usage: ${0##*/} [--out DIR] [--uri URI] [--also DEB-DIR]... [--rpm]" ;;
	esac
	shift
done

V=$(sed -nE 's/^project\(tb5 VERSION ([0-9]+\.[0-9]+\.[0-9]+)[ )].*/\1/p' CMakeLists.txt)
compgen -G "$DEBS/*_$V-*.deb" >/dev/null ||
	tb5_die "no debs of tb5 $V in $DEBS: run ci/package.sh deb first"

export GNUPGHOME=$OUT/gnupg
REPO=$OUT/apt

gpg_q() {
	gpg --batch --quiet --no-tty "$@"
}

# The release key: made once per DIR. A real release keeps its key offline;
# CI's lives and dies with the build directory.
make_key() {
	if [[ -f $GNUPGHOME/fingerprint ]]; then
		echo "release key: $(cat "$GNUPGHOME/fingerprint") (kept in $GNUPGHOME)"
		return 0
	fi
	rm -rf "$GNUPGHOME"
	mkdir -p "$GNUPGHOME"
	chmod 700 "$GNUPGHOME"
	gpg_q --passphrase '' --quick-generate-key "$KEY_NAME" rsa3072 sign 2y
	gpg_q --with-colons --list-secret-keys "$KEY_NAME" |
		awk -F: '$1 == "fpr" { print $10; exit }' >"$GNUPGHOME/fingerprint"
	[[ -s $GNUPGHOME/fingerprint ]] || tb5_die "no release key made"
	echo "release key: made $(cat "$GNUPGHOME/fingerprint") in $GNUPGHOME"
}

# tb5-archive-keyring: the public key where Signed-By points.
make_keyring_deb() {
	local stage=$OUT/keyring-stage fpr deb ver=$V-1 doc
	fpr=$(cat "$GNUPGHOME/fingerprint")

	rm -rf "$stage"
	doc=$stage/usr/share/doc/tb5-archive-keyring
	mkdir -p "$stage/DEBIAN" "$stage/usr/share/keyrings" "$doc" "$stage/usr/share/lintian/overrides"
	cp packaging/lintian/tb5-archive-keyring "$stage/usr/share/lintian/overrides/"
	gpg_q --export "$fpr" >"$stage/usr/share/keyrings/tb5-archive-keyring.gpg"
	cp packaging/debian/copyright "$doc/copyright"
	cat >"$OUT/keyring-changelog" <<-EOF
		tb5-archive-keyring ($ver) unstable; urgency=medium

		  * The key that signs tb5's apt repository:
		    $fpr

		 -- The tb5 authors <tb5@tb5.invalid>  $(date -uR)
	EOF
	gzip -9nc "$OUT/keyring-changelog" >"$doc/changelog.Debian.gz"
	cat >"$stage/DEBIAN/control" <<-EOF
		Package: tb5-archive-keyring
		Version: $ver
		Architecture: all
		Maintainer: The tb5 authors <tb5@tb5.invalid>
		Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)
		Section: misc
		Priority: optional
		Multi-Arch: foreign
		Homepage: https://github.com/tb5-project/tb5
		Description: OpenPGP key of tb5's apt repository
		 The public key that signs tb5's apt repository (its InRelease and
		 Release.gpg), in /usr/share/keyrings/tb5-archive-keyring.gpg, where
		 the repository's sources file (tb5.sources) points with Signed-By.
	EOF
	find "$stage" -type d -exec chmod 0755 {} +
	find "$stage" -type f -exec chmod 0644 {} +
	deb=$REPO/pool/main/tb5-archive-keyring_${ver}_all.deb
	dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
	cp "$deb" "$REPO/tb5-archive-keyring.deb"
	gpg_q --armor --export "$fpr" >"$REPO/tb5-archive-keyring.asc"
	echo "$fpr" >"$REPO/FINGERPRINT"
	rm -rf "$stage" "$OUT/keyring-changelog"
	if [[ ${TB5_RELEASE_LINT:-0} == 1 ]]; then
		local out
		out=$(lintian --no-tag-display-limit "$deb" 2>&1) || true
		[[ -n $out ]] && printf '%s\n' "$out"
		! grep -qE '^[EW]: ' <<<"$out" || tb5_die "lintian: tb5-archive-keyring has errors or warnings"
		echo "lintian: tb5-archive-keyring clean"
	fi
}

make_index() {
	local dist=$REPO/dists/$SUITE bin fpr
	fpr=$(cat "$GNUPGHOME/fingerprint")

	bin=$dist/main/binary-amd64
	mkdir -p "$bin"
	(cd "$REPO" && apt-ftparchive --arch amd64 packages pool/main >"$bin/Packages")
	gzip -9nc "$bin/Packages" >"$bin/Packages.gz"
	(cd "$dist" && apt-ftparchive \
		-o APT::FTPArchive::Release::Origin=tb5 \
		-o APT::FTPArchive::Release::Label=tb5 \
		-o APT::FTPArchive::Release::Suite="$SUITE" \
		-o APT::FTPArchive::Release::Codename="$SUITE" \
		-o APT::FTPArchive::Release::Architectures=amd64 \
		-o APT::FTPArchive::Release::Components=main \
		-o APT::FTPArchive::Release::Description="tb5, a Thunderbolt 5 transport for NCCL" \
		release . >"$OUT/Release.tmp")
	mv "$OUT/Release.tmp" "$dist/Release"
	gpg_q --local-user "$fpr" --digest-algo SHA512 --clearsign -o "$dist/InRelease" "$dist/Release"
	gpg_q --local-user "$fpr" --digest-algo SHA512 --armor --detach-sign -o "$dist/Release.gpg" "$dist/Release"
}

# The dnf repository: the rpms signed, their index signed.
make_rpm_repo() {
	local dir=$OUT/rpm fpr db rpm out
	fpr=$(cat "$GNUPGHOME/fingerprint")

	compgen -G "$RPMS/*-$V-*.rpm" >/dev/null ||
		tb5_die "no rpms of tb5 $V in $RPMS: run ci/package.sh rpm first"
	tb5_install_deps "${TB5_DEPS_RPM[@]}"
	rm -rf "$dir"
	mkdir -p "$dir"
	cp "$RPMS"/*.rpm "$dir/"
	rpmsign --define "_gpg_name $fpr" --define "_gpg_path $GNUPGHOME" \
		--define "__gpg $(command -v gpg)" --addsign "$dir"/*.rpm >"$OUT/rpmsign.log" 2>&1 || {
		cat "$OUT/rpmsign.log"
		tb5_die "rpmsign --addsign failed"
	}
	createrepo_c --quiet "$dir"
	gpg_q --local-user "$fpr" --armor --detach-sign -o "$dir/repodata/repomd.xml.asc" \
		"$dir/repodata/repomd.xml"
	gpg_q --armor --export "$fpr" >"$dir/RPM-GPG-KEY-tb5"
	cat >"$dir/tb5.repo" <<-EOF
		# tb5's dnf repository: /etc/yum.repos.d/tb5.repo
		[tb5]
		name=tb5, a Thunderbolt 5 transport for NCCL
		baseurl=${URI%/apt}/rpm
		enabled=1
		gpgcheck=1
		repo_gpgcheck=1
		gpgkey=${URI%/apt}/rpm/RPM-GPG-KEY-tb5
	EOF
	# What rpm and dnf will check: every rpm's signature against the key
	# alone (a throwaway rpm database), and repomd.xml's.
	db=$(mktemp -d)
	rpm --dbpath "$db" --initdb
	rpm --dbpath "$db" --import "$dir/RPM-GPG-KEY-tb5"
	for rpm in "$dir"/*.rpm; do
		out=$(rpm --dbpath "$db" -K "$rpm" 2>&1) || tb5_die "rpm -K $rpm: $out"
		[[ $out == *"signatures OK"* ]] || tb5_die "rpm -K $rpm: $out"
	done
	gpg_q --verify "$dir/repodata/repomd.xml.asc" "$dir/repodata/repomd.xml" 2>/dev/null ||
		tb5_die "repomd.xml.asc does not verify"
	# And what they refuse: an rpm altered after signing, an index
	# altered after signing.
	rpm=$(find "$dir" -maxdepth 1 -name 'tb5-tools-*.rpm' -print -quit)
	cp "$rpm" "$db/altered.rpm"
	printf 'not what was signed' |
		dd of="$db/altered.rpm" bs=1 seek=$(($(stat -c %s "$rpm") / 2)) conv=notrunc status=none
	out=$(rpm --dbpath "$db" -K "$db/altered.rpm" 2>&1) || true
	[[ $out == *"NOT OK"* ]] || tb5_die "rpm -K took an altered rpm: $out"
	sed 's/<revision>/<revision>1/' "$dir/repodata/repomd.xml" >"$db/repomd.xml"
	! gpg_q --verify "$dir/repodata/repomd.xml.asc" "$db/repomd.xml" 2>/dev/null ||
		tb5_die "repomd.xml.asc verifies an altered repomd.xml"
	rm -rf "$db"
	echo "signed dnf repository: $dir ($(find "$dir" -maxdepth 1 -name '*.rpm' | wc -l) rpms signed, rpm -K: signatures OK, an altered rpm NOT OK; repomd.xml.asc verifies, not over an altered repomd.xml)"
}

main() {
	local n d verify

	tb5_install_deps "${TB5_DEPS_PACKAGE[@]}"
	mkdir -p "$OUT"
	make_key
	rm -rf "$REPO"
	mkdir -p "$REPO/pool/main"
	cp "$DEBS"/*.deb "$REPO/pool/main/"
	for d in "${ALSO[@]}"; do
		cp -n "$d"/*.deb "$REPO/pool/main/"
	done
	make_keyring_deb
	make_index
	# Check the signatures as apt's gpgv does, with the keyring of the deb.
	verify=$(mktemp -d)
	dpkg-deb -x "$REPO/tb5-archive-keyring.deb" "$verify"
	gpgv --keyring "$verify/usr/share/keyrings/tb5-archive-keyring.gpg" \
		"$REPO/dists/$SUITE/InRelease" 2>/dev/null ||
		tb5_die "InRelease does not verify against tb5-archive-keyring"
	gpgv --keyring "$verify/usr/share/keyrings/tb5-archive-keyring.gpg" \
		"$REPO/dists/$SUITE/Release.gpg" "$REPO/dists/$SUITE/Release" 2>/dev/null ||
		tb5_die "Release.gpg does not verify against tb5-archive-keyring"
	rm -rf "$verify"
	cat >"$REPO/tb5.sources" <<-EOF
		# tb5's apt repository: /etc/apt/sources.list.d/tb5.sources
		# (needs tb5-archive-keyring, which holds the key of Signed-By).
		Types: deb
		URIs: $URI
		Suites: $SUITE
		Components: main
		Architectures: amd64
		Signed-By: /usr/share/keyrings/tb5-archive-keyring.gpg
	EOF
	((RPM == 0)) || make_rpm_repo
	gpgconf --kill gpg-agent 2>/dev/null || true
	n=$(grep -c '^Package:' "$REPO/dists/$SUITE/main/binary-amd64/Packages")
	echo "signed apt repository: $REPO ($n packages, suite $SUITE, key $(cat "$GNUPGHOME/fingerprint"))"
	echo "  InRelease and Release.gpg verify against tb5-archive-keyring; sources file $REPO/tb5.sources ($URI)"
}

main
