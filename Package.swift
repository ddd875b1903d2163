// swift-tools-version: 6.1
import PackageDescription

/// Release builds of the audio path skip Swift's run-time exclusivity checks: the capture fan-out
/// touches class-held state (ring buffers, queues) per client per period, and the checks were a
/// fifth of its instructions (callgrind, 100 clients). Debug builds, which the tests run, keep them.
let audioPathSettings: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "audiogate",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "audiogate", targets: ["audiogate"]),
        // For the Benchmarks package (Benchmarks/Package.swift), whose DSP benchmark runs these modules.
        .library(name: "AudioGateCore", targets: ["AudioGateCore"]),
        .library(name: "AudioGateDevices", targets: ["AudioGateDevices"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        // Sendspin's Noise handshake (X25519, ChaChaPoly, AES-GCM, SHA-256, HKDF). The range takes
        // in the 4.x that swift-nio-extras and swift-certificates already resolve.
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CALSA",
            pkgConfig: "alsa",
            providers: [.apt(["libasound2-dev"])]
        ),
        .systemLibrary(
            name: "CSpeexDSP",
            pkgConfig: "speexdsp",
            providers: [.apt(["libspeexdsp-dev"])]
        ),
        // WebRTC's audio processing (webrtc-audio-processing 2.1: AEC3, noise suppression, gain
        // control, the GMM voice detector), built from source into .deps/ by
        // scripts/build-webrtc-apm.sh (Debian 12 has only 0.3) and linked statically. Its header and
        // library paths come from the pkg-config file that script writes; the Makefile and
        // scripts/deps-env.sh put its folder on PKG_CONFIG_PATH.
        .systemLibrary(name: "CWebRTCAPM", pkgConfig: "webrtc-audio-processing-2"),
        // The library is C++; this shim gives it a C interface.
        .target(
            name: "CWebRTCAudio",
            dependencies: ["CWebRTCAPM"],
            cxxSettings: [.define("WEBRTC_POSIX"), .define("WEBRTC_LIBRARY_IMPL")]
        ),
        // Compressed playback (MP3, Ogg Opus/Vorbis, FLAC, WebM) and speech synthesis.
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev"])]
        ),
        .systemLibrary(
            name: "CEspeak",
            pkgConfig: "espeak-ng",
            providers: [.apt(["libespeak-ng-dev"])]
        ),
        // mDNS publishing through the system's Avahi daemon (the Sendspin player's _sendspin._tcp).
        // No pkgConfig: its cflags carry -D_REENTRANT, which SwiftPM warns about; the headers are in /usr/include.
        .systemLibrary(name: "CAvahi", providers: [.apt(["libavahi-client-dev"])]),
        // The Sendspin pairing code's CPace: Elligator2 onto Curve25519 and a scalar multiple of that
        // point, which swift-crypto's X25519 (base point or a peer's key only) cannot give.
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        // The CPU's prefetch hint, which Swift cannot spell: the capture fan-out asks for the next
        // clients' objects while it writes to this one's socket.
        .systemLibrary(name: "CPrefetch"),
        .systemLibrary(name: "CDotProduct"),
        // glibc's mallopt, which its Swift module does not import: the server bounds its arenas.
        .systemLibrary(name: "CMalloc"),
        .target(name: "AudioGateCore", swiftSettings: audioPathSettings),
        .target(
            name: "AudioGateDevices",
            dependencies: [
                "CALSA", "CSpeexDSP", "CDotProduct", "AudioGateCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: audioPathSettings
        ),
        .target(
            name: "AudioGateServer",
            dependencies: [
                "AudioGateCore", "AudioGateDevices", "CPrefetch", "CWebRTCAudio", "CFFmpeg", "CEspeak", "CAvahi", "CSodium",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: audioPathSettings,
            plugins: ["EmbedDocuments"]
        ),
        // Builds the served documents into the server (see Plugins/EmbedDocuments).
        .executableTarget(name: "embed-documents"),
        .plugin(name: "EmbedDocuments", capability: .buildTool(), dependencies: ["embed-documents"]),
        .executableTarget(
            name: "audiogate",
            dependencies: [
                "AudioGateServer", "AudioGateDevices", "AudioGateCore", "CMalloc",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .target(
            name: "AudioGateTestSupport",
            dependencies: ["AudioGateCore"],
            path: "Tests/AudioGateTestSupport"
        ),
        .testTarget(name: "AudioGateCoreTests", dependencies: ["AudioGateCore", "AudioGateTestSupport"]),
        .testTarget(
            name: "AudioGateDevicesTests",
            dependencies: ["AudioGateDevices", "AudioGateCore", "AudioGateTestSupport"]
        ),
        .testTarget(
            name: "AudioGateServerTests",
            dependencies: [
                "AudioGateServer", "AudioGateDevices", "AudioGateCore", "AudioGateTestSupport",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HummingbirdWSTesting", package: "hummingbird-websocket"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6],
    cxxLanguageStandard: .cxx20
)
