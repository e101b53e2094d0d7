#!/bin/sh
# Tests of the Python client (clients/python): a venv under .local
# (git-ignored), the package installed editable with its test extras
# (confluent-kafka, pytest), then pytest: unit tests, the shared wire
# vectors of testdata/wire, and the integration test on the local stack
# (skipped without it, failed under CI=true). Run from anywhere; `make
# test` runs it after go test. PYTHON picks the interpreter (>= 3.9).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
venv="$root/.local/pyvenv"
python=${PYTHON:-python3}
if [ ! -x "$venv/bin/python" ]; then
	"$python" -m venv "$venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check -e "$root/clients/python[test]"
cd "$root/clients/python"
exec "$venv/bin/python" -m pytest -p no:cacheprovider -rs "$@"
