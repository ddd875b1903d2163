import AudioGateCore
import Testing

@testable import AudioGateDevices

@Suite("ALSA PCM handles")
struct PCMHandleTests {
    @Test("the null PCM opens and negotiates a sane format", arguments: [PCMDirection.capture, .playback])
    func nullNegotiates(direction: PCMDirection) throws {
        let handle = try PCMHandle(name: "null", direction: direction, request: direction == .capture ? .capture : .playback)
        let negotiated = handle.negotiated
        #expect(negotiated.format.rate >= 8000 && negotiated.format.rate <= 192_000)
        #expect((1...2).contains(negotiated.format.channels))
        #expect(negotiated.periodFrames > 0)
        #expect(negotiated.bufferFrames >= negotiated.periodFrames * 2)
    }

    @Test("the test card runs at its own 48 kHz with 10 ms periods and a 40 ms buffer")
    func pulseNegotiates() throws {
        let capture = try PCMHandle(name: "pulse", direction: .capture, request: .capture)
        #expect(capture.negotiated.format.rate == 48000)
        #expect(capture.negotiated.format.channels == 1)
        #expect(abs(capture.negotiated.periodFrames - 480) <= 48)
        #expect(abs(capture.negotiated.bufferFrames - 1920) <= 480)
        let playback = try PCMHandle(name: "pulse", direction: .playback, request: .playback)
        #expect(playback.negotiated.format.channels == 2)
        #expect(playback.negotiated.format.rate == 48000)
    }

    @Test("an unknown device name is a clear error naming the call")
    func unknownDevice() {
        #expect {
            _ = try PCMHandle(name: "no_such_device_audiogate", direction: .capture, request: .capture)
        } throws: { error in
            guard let error = error as? ALSAError else { return false }
            return error.call == "snd_pcm_open" && error.code == .notFound && !error.message.isEmpty
        }
    }

    @Test("a typo is unknown; defined PCMs are known even when their card is absent right now")
    func knownNames() {
        for name in ["no_such_device_audiogate", "pulsee", "hww:0,0"] {
            #expect(!DeviceList.isKnown(name), "\(name)")
        }
        for name in ["default", "pulse", "null", "loopback", "auto", "hw:0,0", "plughw:CARD=NoSuchUSB,DEV=0"] {
            #expect(DeviceList.isKnown(name), "\(name)")
        }
    }

    @Test("device listing names pulse, null and the built-in loopback")
    func listing() {
        let names = DeviceList.all().map(\.name)
        #expect(names.contains("null"))
        #expect(names.contains("pulse"))
        #expect(names.contains("loopback"))
    }

    @Test("the backoff doubles from 50 ms to 2 s and stays there")
    func backoff() {
        var backoff = Backoff()
        let delays = (0..<8).map { _ in backoff.next() }
        #expect(delays == [50, 100, 200, 400, 800, 1600, 2000, 2000])
        #expect(backoff.exhausted)
        backoff.reset()
        #expect(backoff.next() == 50)
    }
}
