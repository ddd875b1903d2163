// swift-tools-version: 6.1
import PackageDescription

// audiogate's benchmarks, a package of their own so the product's Package.swift builds only the
// server, its tools and its tests (as swift-nio and Hummingbird keep theirs). `make bench` builds it
// with `swift build -c release --package-path Benchmarks`; the scripts that drive the server and
// these programs are in scripts/.
let package = Package(
    name: "audiogate-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "audiogate", path: ".."),
        // The same swift-nio as the server's (the root Package.swift).
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // DSP paths (resamplers, sample conversion) timed in device-thread-sized periods.
        .executableTarget(
            name: "audiogate-bench",
            dependencies: [
                .product(name: "AudioGateCore", package: "audiogate"),
                .product(name: "AudioGateDevices", package: "audiogate"),
            ]
        ),
        // The networking stack's own floor under one client's steady work.
        .executableTarget(
            name: "nio-floor",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
