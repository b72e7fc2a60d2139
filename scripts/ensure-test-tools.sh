#!/usr/bin/env bash
# The tools the test suite needs besides Python: Chromium + ChromeDriver (browser tests), Node.js + npm (the
# extension's unit tests) and pigz (the export benchmarks' baseline, `tar | pigz`). On Debian/Ubuntu as root they are installed from the distribution; elsewhere this
# says what to install.
set -euo pipefail
missing=()
command -v chromedriver >/dev/null || missing+=(chromium-driver)
{ [ -x /usr/lib/chromium/chromium ] || command -v chromium >/dev/null; } || missing+=(chromium)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
command -v pigz >/dev/null || missing+=(pigz)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "Installing ${missing[*]} for the test suite ..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
  exit 0
fi
echo "The test suite needs: ${missing[*]} (Debian package names). Install them, or set CHROME_BINARY and" >&2
echo "CHROMEDRIVER to a Chromium and its driver." >&2
exit 1
