import AudioGateServer
import AudioGateTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging

/// Builds servers on the test card, on an ephemeral port.
enum TestServer {
    /// The `audiogate` executable built beside the tests.
    static let binary = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/debug/audiogate").path

    static let logger: Logger = {
        var logger = Logger(label: "audiogate-test")
        logger.logLevel = .warning
        return logger
    }()

    /// A configuration on the test card (`pulse`) bound to an ephemeral loopback port.
    static func configuration(device: String = TestCard.device, _ adjust: (inout ServerConfiguration) -> Void = { _ in }) -> ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.captureDevice = device
        configuration.playbackDevice = device
        configuration.dataDirectory = scratchDataDirectory
        // Timing tests measure a running device; stopping and restarting an idle one has its own tests.
        configuration.deviceIdleMilliseconds = 0
        adjust(&configuration)
        return configuration
    }

    /// Recordings of servers that do not test them go here, not into the user's state directory.
    static let scratchDataDirectory = FileManager.default.temporaryDirectory
        .appendingPathComponent("audiogate-tests-\(ProcessInfo.processInfo.processIdentifier)").path

    /// A server and its application.
    static func make(_ configuration: ServerConfiguration = configuration()) -> (AudioGateServer, some ApplicationProtocol) {
        let server = AudioGateServer(configuration: configuration, logger: logger)
        return (server, server.makeApplication())
    }
}

extension TestResponse {
    /// The body as a JSON object.
    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(buffer: body))) as? [String: Any] ?? [:]
    }
}
