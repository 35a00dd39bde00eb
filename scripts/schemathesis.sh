#!/usr/bin/env bash
# Fuzzes a running memdb-server against its own /openapi.json with
# schemathesis (PyPI): no 5xx, documented statuses, content types and
# response schemas. Usage: scripts/schemathesis.sh URL API_KEY [SECONDS]
# Start the server with MEMDB_RATE_LIMIT=0 so the fuzzer is not throttled.
set -euo pipefail
url="${1:?usage: $0 URL API_KEY [SECONDS]}"
key="${2:?usage: $0 URL API_KEY [SECONDS]}"
secs="${3:-180}"
venv="${HOME}/.cache/memdb-schemathesis-venv"
if [ ! -x "$venv/bin/schemathesis" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check 'schemathesis==4.32.5'
fi
exec "$venv/bin/schemathesis" run "$url/openapi.json" \
  -H "Authorization: Bearer $key" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
  --phases examples,coverage,fuzzing --max-time "$secs" -w 2
