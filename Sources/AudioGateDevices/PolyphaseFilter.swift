import CDotProduct
import Foundation

/// A Kaiser-windowed sinc resampler for rates in a small whole-number ratio (48 to 16 kHz, 24 to
/// 48 kHz, 48 to 8 kHz), its dot products in SIMD lanes.
///
/// These ratios are the ones every client and every speech engine uses, and each output sample is a
/// dot product of a hundred taps or more: speexdsp computes it four taps per instruction pair (SSE),
/// this one eight per fused multiply-add where the CPU has AVX2, over a table holding each phase's
/// taps in one run.
///
/// The filter is linear phase and keeps its history across calls, so audio cut into chunks of any
/// size gives the same samples as one piece. Output frame `k` is input frame `k * step / phases`.
/// The products run in `CDotProduct`: AVX2 with FMA where the CPU has it, the baseline vector unit
/// (SSE2, NEON) otherwise.
final class PolyphaseFilter {
    /// Largest upsampling and downsampling factors, after the rates are reduced by their common divisor.
    static let largestFactor = 8
    /// Stopband attenuation in dB the window is designed for (the design asks for 97 past Nyquist).
    static let attenuation = 100.0
    /// Transition band as a fraction of the lower rate: the stopband starts at the lower Nyquist
    /// frequency and the passband ends 7.5 % of that rate below it (6.8 kHz at 16 kHz, half
    /// amplitude at 7.4 kHz).
    static let transition = 0.075

    let channels: Int
    /// Output frames per `step` input frames.
    let phases: Int
    /// Input frames per `phases` output frames.
    let step: Int
    /// Taps per output sample, a multiple of the SIMD width.
    let taps: Int
    /// Input frames an output reads past its own time: the tail held back until more input comes.
    let latency: Int
    /// `phases` rows of `taps` coefficients, row `p` for outputs `p / phases` of an input frame late.
    private let coefficients: UnsafeMutablePointer<Float>
    /// Held input, one row of `capacity` frames per channel.
    private let history: UnsafeMutablePointer<Float>
    private let capacity: Int
    /// Frames of each history row in use.
    private var count = 0
    /// The next output's time in `1 / phases` frames from the start of the history.
    private var position = 0
    /// Zero frames before the first input, so the first outputs read silence for the past.
    private let lead: Int
    /// Whether the products use 256-bit fused multiply-add.
    let wide: Bool

    /// Whether this CPU has 256-bit fused multiply-add (AVX2 and FMA).
    static let cpuHasWideUnit = audiogate_cpu_has_avx2_fma() != 0

    /// The filter for `inputRate` to `outputRate`, or nil when the ratio is not a small whole-number one;
    /// `wide` false keeps to the baseline vector unit.
    init?(inputRate: Int, outputRate: Int, channels: Int, wide: Bool = true) {
        let divisor = Resampler.greatestCommonDivisor(inputRate, outputRate)
        let phases = outputRate / divisor
        let step = inputRate / divisor
        guard inputRate != outputRate, phases <= Self.largestFactor, step <= Self.largestFactor else { return nil }
        self.channels = channels
        self.wide = wide && Self.cpuHasWideUnit
        self.phases = phases
        self.step = step

        let input = Double(inputRate)
        let lower = Double(min(inputRate, outputRate))
        let width = Self.transition * lower
        let cutoff = (lower / 2 - width / 2) / input
        let beta = 0.1102 * (Self.attenuation - 8.7)
        // Kaiser's estimate of the window length for this attenuation and transition width.
        let length = (Self.attenuation - 7.95) / (2.285 * 2 * Double.pi * width / input)
        let halfWidth = length / 2
        let reach = Int(halfWidth.rounded(.up))
        latency = reach
        taps = (2 * reach + 7) / 8 * 8
        lead = taps - reach - 1

        coefficients = .allocate(capacity: phases * taps)
        let window = KaiserWindow(beta: beta)
        for phase in 0..<phases {
            let row = coefficients + phase * taps
            var sum = 0.0
            var values = [Double](repeating: 0, count: taps)
            for tap in 0..<taps {
                // Time of this tap's input frame relative to the output's.
                let offset = Double(tap - lead) - Double(phase) / Double(phases)
                guard abs(offset) < halfWidth else { continue }
                let x = 2 * cutoff * offset
                let sinc = x == 0 ? 1 : sin(Double.pi * x) / (Double.pi * x)
                values[tap] = 2 * cutoff * sinc * window.value(offset / halfWidth)
                sum += values[tap]
            }
            // Each phase passes DC at exactly unity, so a constant input gives a constant output.
            for tap in 0..<taps { row[tap] = Float(values[tap] / sum) }
        }
        capacity = taps + 1024
        history = .allocate(capacity: capacity * channels)
        reset()
    }

    deinit {
        coefficients.deallocate()
        history.deallocate()
    }

    /// Forgets the history: the next input is the first.
    func reset() {
        history.initialize(repeating: 0, count: capacity * channels)
        count = lead
        position = lead * phases
    }

    /// Takes `frames` interleaved input frames until they are used or `capacity` output frames are
    /// written; returns both counts.
    func run(
        _ input: UnsafePointer<Float>, frames: Int, into output: UnsafeMutablePointer<Float>, capacity outputCapacity: Int
    ) -> (consumed: Int, produced: Int) {
        var used = 0
        var made = emit(into: output, capacity: outputCapacity)
        while used < frames && made < outputCapacity {
            let take = min(frames - used, capacity - count)
            guard take > 0 else { break }
            deinterleave(input + used * channels, frames: take)
            used += take
            made += emit(into: output + made * channels, capacity: outputCapacity - made)
        }
        return (used, made)
    }

    private func deinterleave(_ input: UnsafePointer<Float>, frames: Int) {
        if channels == 1 {
            (history + count).update(from: input, count: frames)
        } else {
            for channel in 0..<channels {
                let row = history + channel * capacity + count
                for frame in 0..<frames { row[frame] = input[frame * channels + channel] }
            }
        }
        count += frames
    }

    /// Writes every output the held input completes (at most `outputCapacity`), then drops the
    /// input no later output reads.
    private func emit(into output: UnsafeMutablePointer<Float>, capacity outputCapacity: Int) -> Int {
        let frameStep = step / phases
        var loop = audiogate_polyphase(
            history: history, stride: capacity, channels: channels, coefficients: coefficients, taps: taps,
            lead: lead, phases: phases, frame_step: frameStep, phase_step: step - frameStep * phases,
            end: count - latency, frame: position / phases, phase: position % phases)
        let made =
            wide
            ? audiogate_polyphase_avx2(&loop, output, outputCapacity)
            : audiogate_polyphase_baseline(&loop, output, outputCapacity)
        position = loop.frame * phases + loop.phase
        let keep = loop.frame - lead
        if keep > 0 {
            for channel in 0..<channels {
                let row = history + channel * capacity
                row.update(from: row + keep, count: count - keep)
            }
            count -= keep
            position -= keep * phases
        }
        return made
    }
}
