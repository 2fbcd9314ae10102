#!/bin/sh
# Runs one of lockbench's shipped Python drivers: `run.sh <folder>/driver.py`. The driver's
# virtual environment is made in its folder on first use from its requirements.txt (pinned
# versions, from PyPI), one maker at a time (flock), and made again when the requirements
# change. The driver imports the protocol from this folder (lockbench_driver.py).
# `run.sh --prepare <folder>/driver.py` only makes the environment (`.ci/run` does so beside
# the compile).
set -e
prepare=
if [ "${1:-}" = --prepare ]; then prepare=1; shift; fi
here=$(cd "$(dirname "$0")" && pwd)
dir=$(cd "$(dirname "$1")" && pwd)
driver=$dir/$(basename "$1")
venv=$dir/.venv
ready() { cmp -s "$dir/requirements.txt" "$venv/requirements.txt" 2>/dev/null; }
if ! ready; then
    (
        flock 9
        if ! ready; then
            rm -rf "$venv"
            python3 -m venv "$venv" >&2
            "$venv/bin/pip" install --quiet --disable-pip-version-check \
                -r "$dir/requirements.txt" >&2
            cp "$dir/requirements.txt" "$venv/requirements.txt"
        fi
    ) 9>"$dir/.venv.lock"
fi
[ -z "$prepare" ] || exit 0
PYTHONPATH=$here exec "$venv/bin/python" -u "$driver"
