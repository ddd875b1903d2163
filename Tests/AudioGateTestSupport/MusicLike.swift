import Foundation

/// Music-shaped test signals: chords of harmonic notes over a bass line, a new chord every beat
/// with a plucked envelope, over a quiet noise bed, deterministic. Unlike speech it never pauses
/// and is mostly tonal, the hard case for a voice detector listening to a canceller's residue.
///
/// The noise bed (20 dB under the chords' peak, as brushes, room and recording noise put under any
/// recording) matters to an echo canceller: chords alone excite the echo path at only their few
/// dozen partials, so the canceller's linear filter stays unidentified everywhere else and its
/// suppressor falls back to cutting whole frames, the user's voice with them (docs/benchmarks.md).
public enum MusicLike {
    /// A I-vi-IV-V progression in C (MIDI note numbers), one chord per beat.
    static let chords: [[Int]] = [[60, 64, 67, 36], [57, 60, 64, 45], [53, 57, 60, 41], [55, 59, 62, 43]]

    /// `seconds` of chords at `rate`, peak level about `amplitude`, over a noise bed of peak
    /// `noiseBed` times that (0 for the chords alone).
    public static func chords(
        rate: Int, seconds: Double, beatSeconds: Double = 0.5, amplitude: Double = 0.3, noiseBed: Double = 0.1
    ) -> [Float] {
        let count = Int(seconds * Double(rate))
        let beat = Int(beatSeconds * Double(rate))
        var output = [Float](repeating: 0, count: count)
        var generator = SeededGenerator(seed: 0x6d75_7369_63)
        for n in 0..<count {
            let chord = chords[(n / beat) % chords.count]
            let sinceBeat = Double(n % beat) / Double(rate)
            // A 10 ms attack, then a slow decay that never reaches silence.
            let envelope = min(1, sinceBeat / 0.01) * (0.55 + 0.45 * exp(-sinceBeat * 4))
            let t = Double(n) / Double(rate)
            var value = 0.0
            for note in chord {
                let frequency = 440 * pow(2, Double(note - 69) / 12)
                for harmonic in 1...4 {
                    value += sin(2 * .pi * frequency * Double(harmonic) * t) / Double(harmonic * harmonic)
                }
            }
            let noise = noiseBed == 0 ? 0 : noiseBed * Double.random(in: -1...1, using: &generator)
            output[n] = Float(amplitude * (envelope * value / 3.2 + noise))
        }
        return output
    }
}
