//! Seeded random numbers: the switch's RED draws and the simulator's (link loss, the
//! switches' seeds, workload flows) come from one generator, so that a run repeats
//! exactly from its seed. A leaf: it imports nothing from the crate.

/// SplitMix64 (Steele, Lea and Flood 2014): a tiny, well-mixed, seedable generator. A
/// whole crate for eight lines of arithmetic would be more weight than help.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform draw in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A draw in 0..`n` (`n` > 0), by the remainder: its bias, at most `n` / 2^64, is far
    /// below anything a run could show.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Puts `items` in a uniformly drawn order (Fisher and Yates, as Durstenfeld wrote it).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_uniform_enough_and_repeatable() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let draws: Vec<f64> = (0..100_000).map(|_| a.next_f64()).collect();
        assert!(draws.iter().all(|&d| (0.0..1.0).contains(&d)));
        assert_eq!(
            draws[99_999],
            (0..100_000).map(|_| b.next_f64()).last().unwrap()
        );
        let below_quarter = draws.iter().filter(|&&d| d < 0.25).count() as f64;
        // Binomial(100000, 0.25): sd = 137; allow 5 sd.
        assert!(
            (below_quarter - 25_000.0).abs() < 5.0 * 137.0,
            "{below_quarter}"
        );
    }
}
