import Foundation

/// The recovery policy of alsa-utils `aplay` and PipeWire, shared by both device loops.
enum Recovery {
    enum Outcome {
        /// The stream is usable again.
        case resumed
        /// The handle is dead: close it and reopen by name.
        case reopen
    }

    /// How long a suspended device may take to wake before it is treated as gone.
    static let resumeAttempts = 50

    /// -EAGAIN waits, -EPIPE prepares, -ESTRPIPE resumes then prepares, anything else reopens.
    static func recover(
        from error: ALSAError, stream: any PCMStream, direction: PCMDirection, monitor: DeviceMonitor
    ) -> Outcome {
        do {
            switch error.code {
            case .wouldBlock:
                _ = try stream.wait(timeoutMilliseconds: 10)
                return .resumed
            case .xrun:
                monitor.update {
                    $0.xruns += 1
                    $0.lastError = error.description
                }
                try stream.prepare()
                if direction == .capture { try stream.start() }
                return .resumed
            case .suspended:
                monitor.update { $0.suspends += 1 }
                var attempt = 0
                while attempt < resumeAttempts {
                    do throws(ALSAError) {
                        try stream.resume()
                        break
                    } catch let resumeError where resumeError.code == .wouldBlock {
                        attempt += 1
                        Thread.sleep(forTimeInterval: 0.1)
                    } catch {
                        // The device cannot resume in place; a prepare restarts it from scratch.
                        break
                    }
                }
                try stream.prepare()
                if direction == .capture { try stream.start() }
                return .resumed
            case .notFound, .unsupportedConfiguration, .failed:
                return .reopen
            }
        } catch {
            monitor.update { $0.lastError = error.description }
            return .reopen
        }
    }
}
