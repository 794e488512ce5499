#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the Debian packages named as arguments that are not installed yet.
# As root: apt-get update, then apt-get install.  Otherwise print the line.
missing=""
for p in "$@"; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)
	case "$st" in *" installed") ;; *) missing="$missing $p" ;; esac
done
if [ -z "$missing" ]; then
	echo "deps: all $# packages installed"
	exit 0
fi
echo "deps: missing:$missing"
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: not root; run: sudo apt-get update && sudo apt-get install -y$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q || exit 1
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing || exit 1
echo "deps: installed:$missing"
