# audiogate: two commands set up a fresh Debian machine.
#   make run    install build needs, build release, serve on 127.0.0.1:8750
#   make test   install test needs, start the test sound card if there is none, run the tests
#   make deb    a Debian package of the release build (audiogate_VERSION_ARCH.deb) that needs no Swift
SWIFT ?= swift
ARGS ?=
# Package.swift finds WebRTC's audio processing library (built into .deps/ by
# scripts/build-webrtc-apm.sh) through its pkg-config file; scripts/deps-env.sh sets the same.
export PKG_CONFIG_PATH := $(CURDIR)/.deps/webrtc-audio-processing-2.1/lib/pkgconfig$(if $(PKG_CONFIG_PATH),:$(PKG_CONFIG_PATH))

.PHONY: run build release deb test test-fresh bench-sync deps test-deps bench bench-gate fuzz clean have-swift

# Debian packages no Swift: say so in one line instead of make's "command not found".
have-swift:
	@command -v $(SWIFT) >/dev/null 2>&1 || { echo "audiogate: '$(SWIFT)' not found: building needs Swift 6.1 or newer (the swift.org toolchain or the official swift image) on the PATH" >&2; exit 1; }

deps: have-swift
	@scripts/install-deps.sh

test-deps: have-swift
	@scripts/install-deps.sh test

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release --product audiogate

# The binary, the Swift runtime it links, the systemd unit and /etc/default/audiogate; installs
# with `apt install ./audiogate_VERSION_ARCH.deb` (scripts/build-deb.sh).
deb: release
	scripts/build-deb.sh .build/release/audiogate

run: release
	.build/release/audiogate serve $(ARGS)

test: test-deps
	@scripts/test-card.sh start
	scripts/run-tests.sh

# The test command as a new machine runs it: a clone of the current commit in a temporary folder,
# a scratch HOME and a sound server of its own (scripts/test-fresh.sh).
test-fresh:
	scripts/test-fresh.sh $(FRESH_TARGET)

# Ten consecutive Snapcast sync runs, each to hold p95 within 0.25 ms, with steal and load beside
# each (printed, and written to docs/bench-sync-runs.md); `make test-fresh FRESH_TARGET=bench-sync`
# runs them in a fresh clone.
bench-sync: test-deps
	@scripts/test-card.sh start
	$(SWIFT) build --product audiogate
	Benchmarks/scripts/bench-sync.sh

# The benchmarks are a package of their own (Benchmarks/); the run ends with the callgrind gate and
# fails when it does.
bench: test-deps
	@scripts/test-card.sh start
	$(SWIFT) build -c release --product audiogate
	$(SWIFT) build -c release --package-path Benchmarks
	Benchmarks/scripts/bench.sh

# The callgrind gate alone: instruction counts per capture and playback period and per playback
# message against Benchmarks/thresholds.json (valgrind and the loopback card, no sound card needed).
bench-gate: have-swift
	@scripts/install-deps.sh gate
	$(SWIFT) build -c release --product audiogate
	python3 Benchmarks/scripts/callgrind_gate.py --binary .build/release/audiogate

# 100000 seeded mutations of real input per decoder: each codec path (MP3, Ogg Opus, Ogg Vorbis, FLAC,
# WebM) and each protocol decoder (Snapcast, Wyoming, WAV header, playback WebSocket messages).
fuzz: test-deps
	$(SWIFT) build --build-tests
	AUDIOGATE_FUZZ_CASES=100000 $(SWIFT) test --skip-build --filter "CodecFuzzTests|ProtocolFuzzTests"

clean:
	rm -rf .build Benchmarks/.build
