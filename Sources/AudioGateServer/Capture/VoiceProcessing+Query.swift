import AudioGateCore

extension VoiceProcessing {
    /// Parses `aec`, `ns`, `agc` and `vad` from a capture query and checks that `format` can be
    /// processed; throws a 400 naming the parameter.
    init(query: [String: String], format: AudioFormat) throws(CaptureError) {
        self.init()
        for name in Self.parameterNames {
            guard let text = query[name] else { continue }
            let value: Bool
            switch text {
            case "true", "1": value = true
            case "false", "0": value = false
            default: throw .parameter(name, "true or false")
            }
            switch name {
            case "aec": echoCancellation = value
            case "ns": noiseSuppression = value
            case "agc": gainControl = value
            default: voiceDetection = value
            }
        }
        try check(format)
    }

    /// Throws a 400 naming the first parameter asked for when `format` cannot be processed.
    func check(_ format: AudioFormat) throws(CaptureError) {
        if let problem = problem(with: format) { throw .parameter(problem.parameter, problem.allowed) }
    }
}
