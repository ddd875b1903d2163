/// `{"type":"level","rms_dbfs","peak_dbfs"}`: capture level, both floored at -120.
public struct LevelMessage: ServerMessage {
    /// `"level"`.
    public static let type = "level"
    /// RMS level in dBFS.
    public var rmsDBFS: Double
    /// Peak level in dBFS.
    public var peakDBFS: Double

    /// Creates the message.
    public init(rmsDBFS: Double, peakDBFS: Double) {
        self.rmsDBFS = rmsDBFS
        self.peakDBFS = peakDBFS
    }

    /// Creates the message from a meter's current reading.
    public init(_ meter: LevelMeter) {
        self.init(rmsDBFS: meter.rmsDBFS, peakDBFS: meter.peakDBFS)
    }

    enum CodingKeys: String, CodingKey { case type, rmsDBFS = "rms_dbfs", peakDBFS = "peak_dbfs" }

    /// Decodes and checks `type`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try checkType(container, CodingKeys.type, Self.type)
        rmsDBFS = try container.decode(Double.self, forKey: .rmsDBFS)
        peakDBFS = try container.decode(Double.self, forKey: .peakDBFS)
    }

    /// Encodes with `type`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.type, forKey: .type)
        try container.encode(rmsDBFS.isFinite ? rmsDBFS : LevelMeter.floorDBFS, forKey: .rmsDBFS)
        try container.encode(peakDBFS.isFinite ? peakDBFS : LevelMeter.floorDBFS, forKey: .peakDBFS)
    }

    /// Compact JSON (values to 0.01 dB).
    public func json() -> String {
        let rms = JSONText.number(rmsDBFS, decimals: 2, fallback: LevelMeter.floorDBFS)
        let peak = JSONText.number(peakDBFS, decimals: 2, fallback: LevelMeter.floorDBFS)
        return "{\"type\":\"level\",\"rms_dbfs\":\(rms),\"peak_dbfs\":\(peak)}"
    }
}
