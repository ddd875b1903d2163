#!/usr/bin/env bash
# Regenerates Sources/AudioGateServer/OpenAPIDocument.swift from openapi.yaml, so a binary copied
# anywhere still serves GET /openapi.yaml. Run after every edit of openapi.yaml; a test and
# Tests/EndToEnd/check_openapi.py fail when the two differ.
#   scripts/embed-openapi.sh           rewrite the Swift file
#   scripts/embed-openapi.sh --check   exit 1 if the Swift file is out of date
exec "$(dirname "$0")/embed-file.sh" embed-openapi.sh openapi.yaml Sources/AudioGateServer/OpenAPIDocument.swift \
    OpenAPIDocument yaml "The API description served at \`GET /openapi.yaml\`, byte for byte the repository's openapi.yaml." "$@"
