#!/usr/bin/env bash
# Installs redis-server when it is not on PATH, for `make test` and CI.
# Debian/Ubuntu only; elsewhere it says what to do.
set -euo pipefail
if command -v redis-server >/dev/null 2>&1; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "redis-server is not on PATH and apt-get is not available: install Redis (e.g. 'brew install redis') and retry" >&2
	exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		sudo="sudo"
	else
		echo "redis-server is missing and installing it needs root: run 'apt-get install -y redis-server' as root" >&2
		exit 1
	fi
fi
echo "installing redis-server with apt-get ..." >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq redis-server >/dev/null
# The package starts a system service on 6379; the tests never use it.
redis-server --version
