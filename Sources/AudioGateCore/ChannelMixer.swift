/// Non-allocating channel layout operations on Float samples; every function returns frames produced.
public enum ChannelMixer {
    /// Interleaves equal-length planes (one per channel) into `destination`.
    ///
    /// Frames = min(shortest plane, destination.count / planes.count).
    public static func interleave(
        _ planes: [UnsafeBufferPointer<Float>],
        into destination: UnsafeMutableBufferPointer<Float>
    ) -> Int {
        let channels = planes.count
        guard channels > 0, let dst = destination.baseAddress else { return 0 }
        var frames = destination.count / channels
        for plane in planes { frames = min(frames, plane.count) }
        guard frames > 0 else { return 0 }
        for channel in 0..<channels {
            guard let src = planes[channel].baseAddress else { return 0 }
            for frame in 0..<frames { dst[frame &* channels &+ channel] = src[frame] }
        }
        return frames
    }

    /// Splits interleaved samples into one plane per channel (`planes.count` is the channel count).
    public static func deinterleave(
        _ interleaved: UnsafeBufferPointer<Float>,
        into planes: [UnsafeMutableBufferPointer<Float>]
    ) -> Int {
        let channels = planes.count
        guard channels > 0, let src = interleaved.baseAddress else { return 0 }
        var frames = interleaved.count / channels
        for plane in planes { frames = min(frames, plane.count) }
        guard frames > 0 else { return 0 }
        for channel in 0..<channels {
            guard let dst = planes[channel].baseAddress else { return 0 }
            for frame in 0..<frames { dst[frame] = src[frame &* channels &+ channel] }
        }
        return frames
    }

    /// Averages all channels of each frame into one mono sample.
    public static func downmixToMono(
        _ interleaved: UnsafeBufferPointer<Float>,
        channels: Int,
        into destination: UnsafeMutableBufferPointer<Float>
    ) -> Int {
        guard channels > 0, let src = interleaved.baseAddress, let dst = destination.baseAddress else { return 0 }
        let frames = min(interleaved.count / channels, destination.count)
        switch channels {
        case 1:
            dst.update(from: src, count: frames)
        case 2:
            for frame in 0..<frames { dst[frame] = (src[frame &* 2] + src[frame &* 2 &+ 1]) * 0.5 }
        default:
            let scale = 1 / Float(channels)
            for frame in 0..<frames {
                var sum: Float = 0
                let base = frame &* channels
                for channel in 0..<channels { sum += src[base &+ channel] }
                dst[frame] = sum * scale
            }
        }
        return frames
    }

    /// Copies one channel (0-based) of interleaved audio into a mono buffer.
    public static func pickChannel(
        _ interleaved: UnsafeBufferPointer<Float>,
        channels: Int,
        channel: Int,
        into destination: UnsafeMutableBufferPointer<Float>
    ) -> Int {
        guard channels > 0, channel >= 0, channel < channels,
              let src = interleaved.baseAddress, let dst = destination.baseAddress
        else { return 0 }
        let frames = min(interleaved.count / channels, destination.count)
        for frame in 0..<frames { dst[frame] = src[frame &* channels &+ channel] }
        return frames
    }

    /// Converts between channel counts: same count copies, 1->N duplicates, N->1 averages.
    ///
    /// Other combinations map output channel c to input channel c, repeating the last input channel.
    /// `source` and `destination` must not overlap.
    public static func remix(
        _ source: UnsafeBufferPointer<Float>,
        from inputChannels: Int,
        to outputChannels: Int,
        into destination: UnsafeMutableBufferPointer<Float>
    ) -> Int {
        guard inputChannels > 0, outputChannels > 0,
              let src = source.baseAddress, let dst = destination.baseAddress
        else { return 0 }
        let frames = min(source.count / inputChannels, destination.count / outputChannels)
        guard frames > 0 else { return 0 }
        if inputChannels == outputChannels {
            dst.update(from: src, count: frames &* inputChannels)
        } else if outputChannels == 1 {
            return downmixToMono(source, channels: inputChannels, into: destination)
        } else if inputChannels == 1 {
            if outputChannels == 2 {
                for frame in 0..<frames {
                    let sample = src[frame]
                    dst[frame &* 2] = sample
                    dst[frame &* 2 &+ 1] = sample
                }
            } else {
                for frame in 0..<frames {
                    let sample = src[frame]
                    for channel in 0..<outputChannels { dst[frame &* outputChannels &+ channel] = sample }
                }
            }
        } else {
            for frame in 0..<frames {
                for channel in 0..<outputChannels {
                    let sourceChannel = min(channel, inputChannels &- 1)
                    dst[frame &* outputChannels &+ channel] = src[frame &* inputChannels &+ sourceChannel]
                }
            }
        }
        return frames
    }
}
