import AudioGateCore
import AudioGateDevices

extension VoiceChannel {
    /// Fills `worker.reference` with what left the speaker at capture time `time`, at the group's rate.
    func fillReference(_ worker: inout Worker, at time: UInt64) {
        let frameSize = worker.processor.frameSize
        let deviceRate = echo.rate
        guard deviceRate > 0, let (expected, epoch) = echo.deviceFrame(at: time) else {
            // Nothing has played yet: the reference is silence and the canceller holds still.
            for index in worker.reference.indices { worker.reference[index] = 0 }
            return
        }
        if let known = worker.referenceEpoch, known != epoch { worker.echoPathMoved = true }
        worker.referenceEpoch = epoch
        let ratio = Double(deviceRate) / Double(format.rate)
        // Where the next reference sample comes from: the cursor minus what waits in the FIFO.
        let position = worker.cursor.map { $0 - Double(worker.fifo.count) * ratio }
        let tolerance = Self.resyncMilliseconds * Double(deviceRate) / 1000
        if position == nil || abs(position! - expected) > tolerance || worker.resamplerRate != deviceRate {
            worker.cursor = expected.rounded()
            worker.fifo.removeAll()
            if worker.resamplerRate != deviceRate {
                // Only when the playback rate changes (first use, a reopen at another rate).
                worker.resamplerRate = deviceRate
                worker.resampler =
                    deviceRate == format.rate
                    ? nil : try? Resampler(inputRate: deviceRate, outputRate: format.rate, channels: 1, quality: quality)
                let chunk = deviceRate / 100
                worker.deviceChunk = [Float](repeating: 0, count: chunk)
                worker.resampled = [Float](
                    repeating: 0, count: worker.resampler?.maximumOutputFrames(forInputFrames: chunk) ?? chunk)
            } else {
                worker.resampler?.reset()
            }
        }
        while worker.fifo.count < frameSize, let cursor = worker.cursor {
            let chunk = worker.deviceChunk.count
            worker.deviceChunk.withUnsafeMutableBufferPointer { echo.read(from: Int64(cursor), into: $0) }
            worker.cursor = cursor + Double(chunk)
            let resampler = worker.resampler
            let produced = worker.deviceChunk.withUnsafeBufferPointer { input in
                worker.resampled.withUnsafeMutableBufferPointer { output -> Int in
                    if let resampler { return resampler.process(input, into: output) }
                    _ = output.update(fromContentsOf: input)
                    return input.count
                }
            }
            worker.resampled.withUnsafeBufferPointer { _ = worker.fifo.write(UnsafeBufferPointer(rebasing: $0[0..<produced])) }
        }
        worker.reference.withUnsafeMutableBufferPointer { _ = worker.fifo.read(into: $0) }
    }
}
