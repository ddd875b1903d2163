#!/usr/bin/env bash
# Regenerates Sources/AudioGateServer/DemoPage.swift from examples/browser/index.html, so a binary
# copied anywhere still serves the demo page at GET /. Run after every edit of the page; a test
# fails when the two differ.
#   scripts/embed-page.sh           rewrite the Swift file
#   scripts/embed-page.sh --check   exit 1 if the Swift file is out of date
exec "$(dirname "$0")/embed-file.sh" embed-page.sh examples/browser/index.html Sources/AudioGateServer/DemoPage.swift \
    DemoPage html "The browser demo page served at \`GET /\`, byte for byte the repository's examples/browser/index.html." "$@"
