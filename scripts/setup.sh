#!/usr/bin/env bash
# Everything a fresh machine needs: Debian's WordNet (and chromium, for the tests), the .venv with
# the project, WordNet prepared for NLTK. Safe to rerun: each step skips what is already done.
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium: the test suite opens the HTML report in it (tests/browser.py); chromium-driver: the
# review tests drive it with selenium (tests/test_review_browser.py). miscfiles: the given names
# (/usr/share/dict/propernames) that the caption rules read.
DEBIAN_PACKAGES=(wordnet-base wordnet-sense-index miscfiles chromium chromium-driver)
missing=()
for pkg in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  SUDO=$([ "$(id -u)" -eq 0 ] && echo "" || echo sudo)
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

[ -x .venv/bin/python ] || python3.11 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -c constraints.txt -e '.[demo,audit,review,dev]'
# open_clip without its declared torchvision and timm: see pipeline/audit/clip_model.py.
.venv/bin/python -m pip install -q -c constraints.txt --no-deps open_clip_torch==3.3.0
.venv/bin/imagenot wordnet-prepare
.venv/bin/imagenot prepare-models
