import AudioGateCore

extension VoiceProcessing {
    /// Parses `aec`, `ns`, `agc` and `vad` from a capture query and checks that `format` can be
    /// processed; throws a 400 naming the parameter.
    init(query: [String: String], format: AudioFormat) throws(APIError) {
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

    /// Processing runs on mono audio at the module's own rates; anything else is a clear 400.
    func check(_ format: AudioFormat) throws(APIError) {
        guard isEnabled else { return }
        let first = Self.parameterNames.first { name in
            switch name {
            case "aec": echoCancellation
            case "ns": noiseSuppression
            case "agc": gainControl
            default: voiceDetection
            }
        } ?? "aec"
        let rates = Self.rates.sorted().map(String.init).joined(separator: ", ")
        guard format.channels == 1, Self.rates.contains(format.rate) else {
            throw .parameter(
                first,
                "capture processing (aec, ns, agc, vad) runs on mono audio at \(rates) Hz; "
                    + "this request asks for \(format.channels) channels at \(format.rate) Hz")
        }
    }
}
