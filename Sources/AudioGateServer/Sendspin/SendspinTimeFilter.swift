/// Sendspin's time filter (the `Sendspin/time-filter` reference, ported as is): a two-dimensional
/// Kalman filter over the offset of the server's clock from ours and its drift, fed with NTP-style
/// measurements. All times are microseconds; ours is CLOCK_MONOTONIC.
///
/// One departure from the reference: a conversion applies the drift only once
/// `minimumSamplesForDrift` measurements are in and the drift is one a clock can have
/// (`plausibleDrift`). Two early measurements biased apart within their round trips (a server
/// busy starting up) can make a significant-looking drift of a thousand ppm, and a chunk dated
/// seconds ahead then lands milliseconds off; it plays so until the queue has moved past it.
struct SendspinTimeFilter: Sendable {
    /// Measurements before the drift may date a chunk.
    static let minimumSamplesForDrift = 10
    /// A drift past this is an estimate gone wrong: crystals keep within about 100 ppm.
    static let plausibleDrift = 500e-6

    var processVariance = 0.0
    var driftProcessVariance = 1e-11 * 1e-11
    var forgetVarianceFactor = 2.0 * 2.0
    var adaptiveCutoff = 3.0
    var minimumSamplesForForgetting = 100
    var driftSignificanceThresholdSquared = 2.0 * 2.0
    var maxErrorScale = 0.5

    private(set) var count = 0
    private(set) var lastUpdate: Int64 = 0
    private(set) var offset = 0.0
    private(set) var drift = 0.0
    private(set) var offsetCovariance = Double.infinity
    private var offsetDriftCovariance = 0.0
    private var driftCovariance = 0.0
    private var useDrift = false

    /// Adds one measurement: `measurement` = ((T2-T1)+(T3-T4))/2, `maxError` = ((T4-T1)-(T3-T2))/2,
    /// taken at our time `timeAdded` (T4). One not later than the previous is skipped.
    mutating func update(measurement: Int64, maxError: Int64, timeAdded: Int64) {
        guard timeAdded > lastUpdate else { return }
        let dt = Double(timeAdded - lastUpdate)
        let dtSquared = dt * dt
        lastUpdate = timeAdded
        let updateStdDev = Double(maxError) * maxErrorScale
        let measurementVariance = updateStdDev * updateStdDev
        let measured = Double(measurement)

        if count <= 0 {
            count += 1
            offset = measured
            offsetCovariance = measurementVariance
            drift = 0
            return
        }
        if count == 1 {
            count += 1
            drift = (measured - offset) / dt
            offset = measured
            driftCovariance = (offsetCovariance + measurementVariance) / dtSquared
            offsetCovariance = measurementVariance
            return
        }

        // Prediction.
        let (predicted, predictedVariance) = prediction(after: dt)
        var newDriftCovariance = driftCovariance + dt * driftProcessVariance
        var newOffsetDriftCovariance = offsetDriftCovariance + driftCovariance * dt
        var newOffsetCovariance = predictedVariance

        // Innovation, and forgetting after a jump (a network disruption or a clock step).
        let residual = measured - predicted
        if count < minimumSamplesForForgetting {
            count += 1
        } else if abs(residual) > Double(maxError) * adaptiveCutoff {
            newDriftCovariance *= forgetVarianceFactor
            newOffsetDriftCovariance *= forgetVarianceFactor
            newOffsetCovariance *= forgetVarianceFactor
        }

        // Update; the floor keeps a zero-error loopback measurement from dividing by zero.
        let uncertainty = 1.0 / max(newOffsetCovariance + measurementVariance, 1e-9)
        let offsetGain = newOffsetCovariance * uncertainty
        let driftGain = newOffsetDriftCovariance * uncertainty
        offset = predicted + offsetGain * residual
        drift += driftGain * residual
        driftCovariance = newDriftCovariance - driftGain * newOffsetDriftCovariance
        offsetDriftCovariance = newOffsetDriftCovariance - driftGain * newOffsetCovariance
        offsetCovariance = newOffsetCovariance - offsetGain * newOffsetCovariance
        useDrift = drift * drift > driftSignificanceThresholdSquared * driftCovariance
    }

    /// The drift conversions apply (server clock rate over ours, less one): 0 until significant,
    /// well founded and plausible.
    var effectiveDrift: Double {
        useDrift && count >= Self.minimumSamplesForDrift && abs(drift) <= Self.plausibleDrift ? drift : 0
    }

    /// Whether an NTP-style measurement taken at our `time` agrees with this filter's prediction
    /// for then: the true offset lies within `maxError` of the measurement, and the prediction
    /// within three of its standard deviations (grown over the time since the last update) of it.
    func agrees(measurement: Int64, maxError: Int64, at time: Int64) -> Bool {
        guard isSynchronized, time > lastUpdate else { return false }
        let (predicted, variance) = prediction(after: Double(time - lastUpdate))
        guard predicted.isFinite, variance.isFinite, variance >= 0 else { return false }
        return abs(Double(measurement) - predicted) <= Double(maxError) + 3 * variance.squareRoot()
    }

    /// The offset `dt` microseconds after the last update, and its variance: the prediction step.
    private func prediction(after dt: Double) -> (offset: Double, variance: Double) {
        (offset + drift * dt,
         offsetCovariance + 2 * offsetDriftCovariance * dt + driftCovariance * (dt * dt) + dt * processVariance)
    }

    /// Ready to schedule playback: two measurements and a finite covariance.
    var isSynchronized: Bool { count >= 2 && offsetCovariance.isFinite }

    /// The offset's standard deviation, microseconds.
    var error: Double { offsetCovariance.squareRoot() }

    /// Our time for the server's `serverTime`, or nil when the result does not fit 64 bits.
    func clientTime(forServer serverTime: Int64) -> Int64? {
        let effectiveDrift = self.effectiveDrift
        let value = ((Double(serverTime) - offset + effectiveDrift * Double(lastUpdate)) / (1 + effectiveDrift)).rounded()
        return Self.exactly(value)
    }

    /// The server's time for our `clientTime`, or nil when it does not fit 64 bits.
    func serverTime(forClient clientTime: Int64) -> Int64? {
        let effectiveDrift = self.effectiveDrift
        let value = (Double(clientTime) + offset + effectiveDrift * (Double(clientTime) - Double(lastUpdate))).rounded()
        return Self.exactly(value)
    }

    /// Largest magnitude kept: far past any clock, and exact in a Double.
    static let limit = Double(Int64(1) << 62)

    private static func exactly(_ value: Double) -> Int64? {
        guard value.isFinite, abs(value) < limit else { return nil }
        return Int64(value)
    }
}
