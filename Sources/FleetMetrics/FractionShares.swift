/// How a fleet of `count` clients is shared out by fractions (network profiles, in their order): share k is
/// ⌊count × (f_1 + … + f_k)⌋ − ⌊count × (f_1 + … + f_(k−1))⌋, so the shares never exceed `count` and fractions
/// adding up to 1 leave nobody out. One definition for the scenario's `validate` plan and the engine's assignment.
public enum FractionShares {
    public static func counts(of count: Int, fractions: some Sequence<Double>) -> [Int] {
        var cumulative = 0.0
        var taken = 0
        return fractions.map { fraction in
            cumulative += max(0, fraction)
            let upTo = min(count, Int((Double(count) * cumulative + 1e-9).rounded(.down)))
            let share = max(0, upTo - taken)
            taken += share
            return share
        }
    }
}
