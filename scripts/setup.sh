#!/usr/bin/env bash
# What a fresh machine needs for one of the two commands: `setup.sh demo` (make demo: Debian's
# WordNet and word lists, the .venv with the pipeline, the demo's image server and the review) or
# `setup.sh test` (make test, make setup: also chromium for the browser tests, the test tools, the
# Google Cloud extra, the audits and their open_clip, the scoring models prepared ahead). WordNet's
# copy is prepared (seconds) and checked; the scoring models a config needs are otherwise prepared
# the first time a command needs them, with a line saying so. Safe to rerun: each step skips what
# is already done. It prints a line per step; what the tools print goes to the log it names
# (SETUP_LOG, default setup.log at the repository root), and a failing step shows the log's end.
set -euo pipefail
cd "$(dirname "$0")/.."
PROFILE=${1:-test}
case "$PROFILE" in
demo) EXTRAS=demo,review ;;
test) EXTRAS=demo,review,audit,dev ;; # dev brings gcp
*)
  echo "usage: scripts/setup.sh [demo|test]" >&2
  exit 2
  ;;
esac
LOG=${SETUP_LOG:-setup.log}
: >"$LOG"
echo "set-up ($PROFILE): one line per step; the details go to $LOG"

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

# WordNet 3.0 at the version imagenot pins (wordnet/nltk_data.py checks its files' digests);
# miscfiles: the given names (/usr/share/dict/propernames) that the caption rules read. For the
# tests: chromium, in which the suite opens the HTML report (tests/browser.py), and
# chromium-driver, through which the review tests drive it with selenium.
DEBIAN_PACKAGES=(wordnet-base=1:3.0-37 wordnet-sense-index=1:3.0-37 miscfiles)
if [ "$PROFILE" = test ]; then
  DEBIAN_PACKAGES+=(chromium chromium-driver)
fi
missing=()
for pkg in "${DEBIAN_PACKAGES[@]}"; do
  name=${pkg%%=*} version=${pkg#*=}
  installed=$(dpkg-query -W -f='${Status} ${Version}' "$name" 2>/dev/null || true)
  [[ $installed == "install ok installed"* && ($pkg == "$name" || $installed == *" $version") ]] || missing+=("$pkg")
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
  .venv/bin/python -m pip install -c constraints.txt -e ".[$EXTRAS]"
  if [ "$PROFILE" = test ]; then
    # open_clip without its declared torchvision and timm: see pipeline/audit/clip_model.py.
    .venv/bin/python -m pip install -c constraints.txt --no-deps open_clip_torch==3.3.0
  fi
}
step "the virtualenv (.venv)" virtualenv
step "the project ($EXTRAS)" project
step "WordNet 3.0, checked, and its noun index" .venv/bin/imagenot wordnet-prepare
if [ "$PROFILE" = test ]; then # the tests use the ONNX export and the static model in many workers
  step "the scoring models" .venv/bin/imagenot prepare-models
fi
echo "set-up done: .venv/bin/imagenot is the command line"
