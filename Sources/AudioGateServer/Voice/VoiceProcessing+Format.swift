import AudioGateCore

extension VoiceProcessing {
    /// Why `format` cannot be processed, naming the first parameter that asks for processing; nil
    /// when it can (or nothing is asked). Processing runs on mono audio at the module's own rates.
    func problem(with format: AudioFormat) -> (parameter: String, allowed: String)? {
        guard isEnabled else { return nil }
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
            return (
                first,
                "capture processing (aec, ns, agc, vad) runs on mono audio at \(rates) Hz; "
                    + "this request asks for \(format.channels) channels at \(format.rate) Hz"
            )
        }
        return nil
    }
}
