#!/usr/bin/env bash
# Everything a fresh machine needs: Debian's WordNet (and chromium, for the tests), the .venv with
# the project, WordNet prepared for NLTK, the scoring models. Safe to rerun: each step skips what is
# already done. It prints a line per step; what the tools print goes to the log it names
# (SETUP_LOG, default setup.log at the repository root), and a failing step shows the log's end.
set -euo pipefail
cd "$(dirname "$0")/.."
LOG=${SETUP_LOG:-setup.log}
: >"$LOG"
echo "set-up: one line per step; the details go to $LOG"

step() { # step "what it does" command args...: the command's output to the log, one line here
  local what=$1 start=$SECONDS
  shift
  printf '  %-44s' "$what"
  echo "=== $what: $*" >>"$LOG"
  if "$@" >>"$LOG" 2>&1; then
    echo "done ($((SECONDS - start)) s)"
  else
    local status=$?
    echo "FAILED (exit $status); the end of $LOG:"
    tail -n 25 "$LOG" >&2
    exit "$status"
  fi
}

# chromium: the test suite opens the HTML report in it (tests/browser.py); chromium-driver: the
# review tests drive it with selenium (tests/test_review_browser.py). miscfiles: the given names
# (/usr/share/dict/propernames) that the caption rules read.
DEBIAN_PACKAGES=(wordnet-base wordnet-sense-index miscfiles chromium chromium-driver)
missing=()
for pkg in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
done
debian_packages() {
  local sudo
  sudo=$([ "$(id -u)" -eq 0 ] && echo "" || echo sudo)
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}
if ((${#missing[@]})); then
  step "Debian packages (${#missing[@]} missing)" debian_packages
else
  echo "  Debian packages                             already installed"
fi

virtualenv() {
  [ -x .venv/bin/python ] || python3.11 -m venv .venv
  .venv/bin/python -m pip install --upgrade pip
}
project() {
  .venv/bin/python -m pip install -c constraints.txt -e '.[demo,audit,review,dev]'
  # open_clip without its declared torchvision and timm: see pipeline/audit/clip_model.py.
  .venv/bin/python -m pip install -c constraints.txt --no-deps open_clip_torch==3.3.0
}
step "the virtualenv (.venv)" virtualenv
step "the project and its extras" project
step "WordNet 3.0 for NLTK" .venv/bin/imagenot wordnet-prepare
step "the scoring models" .venv/bin/imagenot prepare-models
echo "set-up done: .venv/bin/imagenot is the command line"
