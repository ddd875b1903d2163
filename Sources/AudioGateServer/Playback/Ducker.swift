import AudioGateCore
import Foundation

/// The gain music streams get: while a voice stream is audible it falls by `depthDecibels` over
/// `attackSeconds`, and once the voice has been quiet for `holdSeconds` it climbs back over
/// `releaseSeconds`. Both ramps are straight lines in decibels, a constant factor per frame, so
/// they never click.
///
/// A value kept under the mixer's render lock; never allocates.
struct Ducker {
    static let attackSeconds = 0.1
    static let releaseSeconds = 0.5
    /// Covers the gaps between words, so music does not pump in and out of a sentence.
    static let holdSeconds = 0.25
    /// A voice period whose peak stays under this (-60 dBFS) is silence.
    static let audibleLevel: Float = 0.001

    let depthDecibels: Double
    /// The gain while ducked.
    let floor: Float
    private(set) var gain: Float = 1
    private var holdFrames = 0

    init(depthDecibels: Double) {
        self.depthDecibels = max(0, depthDecibels)
        floor = Float(pow(10, -self.depthDecibels / 20))
    }

    /// Whether music is lowered or on its way down or back up.
    var active: Bool { gain < 1 || holdFrames > 0 }

    /// Advances one period of `frames` frames; returns the gain for the whole period, or nil when
    /// the gain ramps: then `curve` holds one gain per frame.
    mutating func advance(voiceAudible: Bool, frames: Int, rate: Int, curve: UnsafeMutablePointer<Float>) -> Float? {
        guard depthDecibels > 0 else { return 1 }
        if voiceAudible {
            holdFrames = Int(Self.holdSeconds * Double(rate))
        } else {
            holdFrames = max(0, holdFrames - frames)
        }
        let ducked = voiceAudible || holdFrames > 0
        let target: Float = ducked ? floor : 1
        guard gain != target else { return gain }
        let seconds = ducked ? Self.attackSeconds : Self.releaseSeconds
        let factor = Float(pow(10, (ducked ? -depthDecibels : depthDecibels) / 20 / (seconds * Double(rate))))
        var ramp = GainRamp(from: gain, to: target, factor: factor)
        curve.update(repeating: 1, count: frames)
        SampleMath.ramp(curve, frames: frames, channels: 1, &ramp)
        gain = ramp.gain
        return nil
    }
}
