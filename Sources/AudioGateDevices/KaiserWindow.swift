import Foundation

/// The Kaiser window `I0(beta * sqrt(1 - x^2)) / I0(beta)` on -1...1.
struct KaiserWindow {
    let beta: Double
    private let scale: Double

    init(beta: Double) {
        self.beta = beta
        scale = 1 / Self.besselI0(beta)
    }

    func value(_ x: Double) -> Double {
        guard abs(x) < 1 else { return 0 }
        return Self.besselI0(beta * (1 - x * x).squareRoot()) * scale
    }

    /// The zeroth-order modified Bessel function of the first kind, by its power series.
    static func besselI0(_ x: Double) -> Double {
        var sum = 1.0
        var term = 1.0
        let quarter = x * x / 4
        var k = 1.0
        while term > sum * 1e-17 {
            term *= quarter / (k * k)
            sum += term
            k += 1
        }
        return sum
    }
}
