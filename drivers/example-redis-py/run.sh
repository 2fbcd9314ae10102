#!/bin/sh
# Makes this driver's virtual environment on first use (one maker at a time: flock), then runs
# the driver in it (`run.sh --prepare` only makes the environment). The pinned version is the
# manifest's.
set -e
cd "$(dirname "$0")"
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import redis' 2>/dev/null; then
    (
        flock 9
        if ! .venv/bin/python -c 'import redis' 2>/dev/null; then
            python3 -m venv .venv >&2
            .venv/bin/pip install --quiet redis==5.0.8 >&2
        fi
    ) 9>.venv.lock
fi
[ "${1:-}" != --prepare ] || exit 0
exec .venv/bin/python driver.py
