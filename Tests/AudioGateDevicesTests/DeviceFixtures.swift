import AudioGateCore
import AudioGateDevices
import Foundation
import Logging
import Synchronization

/// Collects channel 0 of everything captured, and the states the loop reported.
final class CollectingSink: CaptureSink {
    struct State {
        var samples: [Float] = []
        var states: [DeviceState] = []
        var rate = 0
        var stallMilliseconds = 0
        var timestamps: [UInt64] = []
    }

    let state = Mutex(State())

    func captured(_ samples: UnsafeBufferPointer<Float>, frames: Int, format: AudioFormat, timestamp: UInt64) {
        let stall = state.withLock { state in
            state.rate = format.rate
            state.timestamps.append(timestamp)
            for frame in 0..<frames { state.samples.append(samples[frame * format.channels]) }
            defer { state.stallMilliseconds = 0 }
            return state.stallMilliseconds
        }
        // A consumer that stops the capture thread, as a stuck client would if the hub blocked.
        if stall > 0 { Thread.sleep(forTimeInterval: Double(stall) / 1000) }
    }

    func captureStatusChanged(_ status: DeviceStatus) {
        state.withLock { $0.states.append(status.state) }
    }

    var samples: [Float] { state.withLock { $0.samples } }
    var rate: Int { state.withLock { $0.rate } }

    func clear() { state.withLock { $0.samples.removeAll() } }
}

/// A continuous sine on every channel, phase carried across periods.
final class ToneSource: PlaybackSource {
    struct State {
        var phase = 0.0
        var states: [DeviceState] = []
        var framesWritten: UInt64 = 0
        /// The next progress report sleeps this long, as a playback thread kept off the CPU between writes would.
        var stallMilliseconds = 0
    }

    let frequency: Double
    let amplitude: Double
    let state = Mutex(State())

    init(frequency: Double, amplitude: Double) {
        self.frequency = frequency
        self.amplitude = amplitude
    }

    func render(into buffer: UnsafeMutableBufferPointer<Float>, frames: Int, format: AudioFormat, startFrame: UInt64) {
        state.withLock { state in
            let step = 2 * Double.pi * frequency / Double(format.rate)
            for frame in 0..<frames {
                let value = Float(amplitude * sin(state.phase))
                state.phase += step
                if state.phase > 2 * Double.pi { state.phase -= 2 * Double.pi }
                for channel in 0..<format.channels { buffer[frame * format.channels + channel] = value }
            }
        }
    }

    func playbackProgress(framesWritten: UInt64, clock: DeviceClock) {
        let stall = state.withLock { state in
            state.framesWritten = framesWritten
            defer { state.stallMilliseconds = 0 }
            return state.stallMilliseconds
        }
        if stall > 0 { Thread.sleep(forTimeInterval: Double(stall) / 1000) }
    }

    func playbackStatusChanged(_ status: DeviceStatus) {
        state.withLock { $0.states.append(status.state) }
    }
}

extension Logger {
    static let test: Logger = {
        var logger = Logger(label: "audiogate-test")
        logger.logLevel = .warning
        return logger
    }()
}
