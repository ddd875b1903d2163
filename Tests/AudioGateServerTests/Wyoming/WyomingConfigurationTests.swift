import AudioGateCore
import AudioGateServer
import Testing

@Suite("Wyoming configuration")
struct WyomingConfigurationTests {
    @Test("off by default; loopback hosts need nothing more")
    func defaults() {
        var configuration = WyomingConfiguration()
        #expect(!configuration.isEnabled)
        #expect(configuration.problem(host: "0.0.0.0") == nil)
        configuration.micPort = 10600
        for host in ["127.0.0.1", "localhost", "::1", "127.0.0.2"] {
            #expect(configuration.problem(host: host) == nil, "\(host)")
        }
        #expect(configuration.micFormat == AudioFormat(rate: 16000, channels: 1, sampleFormat: .s16le))
    }

    @Test("a non-loopback host needs --wyoming-allow-remote")
    func remote() {
        var configuration = WyomingConfiguration()
        configuration.sndPort = 10601
        for host in ["0.0.0.0", "192.168.1.5", "::"] {
            #expect(configuration.problem(host: host)?.contains("--wyoming-allow-remote") == true, "\(host)")
        }
        configuration.allowRemote = true
        #expect(configuration.problem(host: "0.0.0.0") == nil)
    }

    @Test("bad formats, ports, stream names and processing are refused with the flag's name")
    func invalid() {
        let cases: [(WyomingConfiguration) -> WyomingConfiguration] = [
            { var c = $0; c.micRate = 12345; return c },
            { var c = $0; c.micWidth = 5; return c },
            { var c = $0; c.micChannels = 3; return c },
            { var c = $0; c.sndPort = 10600; return c },
            { var c = $0; c.micPort = 70000; return c },
            { var c = $0; c.sndStream = "no spaces"; return c },
            { var c = $0; c.micRate = 44100; c.micProcessing = VoiceProcessing(aec: true); return c },
        ]
        var base = WyomingConfiguration()
        base.micPort = 10600
        for (index, change) in cases.enumerated() {
            #expect(change(base).problem(host: "127.0.0.1") != nil, "case \(index)")
        }
        #expect(WyomingConfiguration.sampleFormat(width: 1) == .u8)
        #expect(WyomingConfiguration.sampleFormat(width: 3) == .s24le3)
    }
}
