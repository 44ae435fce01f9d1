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
/// `"16M"`, `"1G"`), as on the command line. For `#[serde(deserialize_with = ...)]`.
pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Written {
        Number(u64),
        Text(String),
    }
    match serde::Deserialize::deserialize(d)? {
        Written::Number(n) => Ok(n),
        Written::Text(t) => parse(&t).map_err(serde::de::Error::custom),
    }
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
    fn human_picks_the_exact_unit() {
        assert_eq!(human(8192), "8 KB");
        assert_eq!(human(16 << 20), "16 MB");
        assert_eq!(human(1000), "1000 B");
        assert_eq!(human(1536), "1536 B");
    }
}
