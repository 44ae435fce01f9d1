//! Byte counts as people write and read them: `8K`, `16M`, `1G` (powers of 1024, as
//! nccl-tests' `-b`/`-e` take them).

/// A byte count that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}': give a byte count such as 4096, 8K, 16M or 1G")]
pub struct BytesError(pub String);

/// Parses `4096`, `8K`, `16m`, `1G` (K = 1024).
pub fn parse(s: &str) -> Result<u64, BytesError> {
    let t = s.trim();
    let (digits, scale) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1 << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|v| v.checked_mul(scale))
        .ok_or_else(|| BytesError(s.to_owned()))
}

/// A byte count in a TOML file: an integer (`4096`) or a string with a suffix (`"8K"`,
/// `"16M"`, `"1G"`), as on the command line. For `#[serde(deserialize_with = ...)]`. A
/// negative number gets the same message as a bad string; a float (`1.5e7`, even one
/// that is a whole number) is refused as one.
pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    struct Count;
    impl serde::de::Visitor<'_> for Count {
        type Value = u64;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a byte count such as 4096, \"8K\", \"16M\" or \"1G\"")
        }

        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<u64, E> {
            Ok(v)
        }

        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<u64, E> {
            u64::try_from(v).map_err(|_| E::custom(BytesError(v.to_string())))
        }

        /// TOML reads `1.5e7` and `4096.0` as floats, and serde hands over the value, not
        /// the text: `15000000` alone would look valid. A count is an integer here as on
        /// the command line (`1.5M` is refused there), so the message says why.
        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<u64, E> {
            Err(E::custom(format!(
                "{v:?} is a floating-point number: give a byte count as an integer (4096) or \
                 a string with a suffix (\"8K\", \"16M\", \"1G\")"
            )))
        }

        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<u64, E> {
            parse(v).map_err(E::custom)
        }
    }
    d.deserialize_any(Count)
}

/// As [`deserialize`], for an optional key.
pub fn deserialize_option<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    deserialize(d).map(Some)
}

/// "8 KB", "16 MB", "1 GB", "1000 B": the largest unit that divides `b` exactly.
pub fn human(b: u64) -> String {
    match b {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KB", b >> 10),
        b => format!("{b} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_are_powers_of_1024() {
        assert_eq!(parse("4096"), Ok(4096));
        assert_eq!(parse("8K"), Ok(8192));
        assert_eq!(parse("16m"), Ok(16 << 20));
        assert_eq!(parse("1G"), Ok(1 << 30));
        for bad in ["", "K", "1.5M", "-8K", "8X", "99999999999999999999G"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        // 2^64 / 2^30 overflows: refused, not wrapped.
        assert!(parse("17179869184G").is_err());
    }

    #[test]
    fn a_toml_count_is_a_whole_number_or_a_suffixed_string() {
        #[derive(Debug, serde::Deserialize)]
        struct T {
            #[serde(deserialize_with = "deserialize")]
            b: u64,
        }
        let read = |text: &str| toml::from_str::<T>(text).map(|t| t.b);
        assert_eq!(read("b = 4096").unwrap(), 4096);
        assert_eq!(read("b = \"16M\"").unwrap(), 16 << 20);
        for (text, shown) in [("b = -1", "'-1'"), ("b = \"8X\"", "'8X'")] {
            let e = read(text).unwrap_err().to_string();
            assert!(
                e.contains(shown) && e.contains("give a byte count"),
                "{text}: {e}"
            );
        }
        // A float said '15000000': give a byte count, a number that looks valid. It is
        // named a float, whole or not.
        for (text, shown) in [("b = 1.5e7", "15000000.0"), ("b = 1.5", "1.5")] {
            let e = read(text).unwrap_err().to_string();
            assert!(
                e.contains(&format!("{shown} is a floating-point number"))
                    && e.contains("as an integer"),
                "{text}: {e}"
            );
        }
        let e = read("b = true").unwrap_err().to_string();
        assert!(e.contains("a byte count such as 4096"), "{e}");
    }

    #[test]
    fn human_picks_the_exact_unit() {
        assert_eq!(human(8192), "8 KB");
        assert_eq!(human(16 << 20), "16 MB");
        assert_eq!(human(1000), "1000 B");
        assert_eq!(human(1536), "1536 B");
    }
}
