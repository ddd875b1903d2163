import Foundation

/// Speech-shaped test signals for the echo canceller and the voice detector: a gliding pitch
/// with harmonics, syllables of a few hundred ms and a little breath noise, deterministic per seed.
public enum SpeechLike {
    /// `seconds` of voiced "speech" at `rate`, peak level about `amplitude`.
    public static func utterance(rate: Int, seconds: Double, seed: UInt64, amplitude: Double = 0.3) -> [Float] {
        var generator = SeededGenerator(seed: seed)
        let count = Int(seconds * Double(rate))
        let base = 110 + Double(generator.next() % 90)
        var phase = 0.0
        var output = [Float](repeating: 0, count: count)
        let syllable = 0.18 + Double(generator.next() % 100) / 1000
        for n in 0..<count {
            let t = Double(n) / Double(rate)
            let pitch = base * (1 + 0.15 * sin(2 * .pi * 0.7 * t) + 0.05 * sin(2 * .pi * 3.1 * t))
            phase += 2 * .pi * pitch / Double(rate)
            var voiced = 0.0
            for harmonic in 1...12 {
                // A falling spectrum with two formant-like bumps.
                let frequency = pitch * Double(harmonic)
                let formant = exp(-pow((frequency - 700) / 300, 2)) + 0.6 * exp(-pow((frequency - 1800) / 400, 2))
                voiced += (0.3 / Double(harmonic) + formant) * sin(Double(harmonic) * phase)
            }
            let envelope = pow(max(0, sin(.pi * t / syllable)), 2)
            let noise = Double(Int64(bitPattern: generator.next()) >> 11) / Double(1 << 52)
            output[n] = Float(amplitude * envelope * (0.35 * voiced + 0.02 * noise))
        }
        return output
    }

    /// Echo-return-loss enhancement in dB: how far `processed` lies below `raw` (RMS, same span).
    public static func erle(raw: ArraySlice<Float>, processed: ArraySlice<Float>) -> Double {
        Signal.rmsDBFS(Array(raw)) - Signal.rmsDBFS(Array(processed))
    }
}
