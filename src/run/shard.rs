//! Deterministic sharding: `--shard i/n` keeps the cases whose stable hash falls in shard i.

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// One shard of `total`, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 1..=total.
    pub index: u32,
    /// Number of shards.
    pub total: u32,
}

impl Shard {
    /// Parses `i/n` with 1 <= i <= n.
    pub fn parse(text: &str) -> Result<Shard> {
        let bad = || {
            Error::other(
                format!("--shard {text:?} is not of the form i/n with 1 <= i <= n"),
                Some("e.g. --shard 2/4 runs the second of four shards".into()),
            )
        };
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let total: u32 = n.trim().parse().map_err(|_| bad())?;
        if total == 0 || index == 0 || index > total {
            return Err(bad());
        }
        Ok(Shard { index, total })
    }

    /// Whether `case_id` belongs to this shard: the first 8 bytes of its SHA-256,
    /// modulo `total`, so the split never depends on spec order or machine.
    pub fn keeps(&self, case_id: &str) -> bool {
        let digest = Sha256::digest(case_id.as_bytes());
        let mut head = [0u8; 8];
        head.copy_from_slice(&digest[..8]);
        u64::from_be_bytes(head) % u64::from(self.total) == u64::from(self.index - 1)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_lands_in_exactly_one_shard() {
        let shards: Vec<Shard> = (1..=3).map(|i| Shard { index: i, total: 3 }).collect();
        for n in 0..500 {
            let id = format!("case-{n}");
            assert_eq!(shards.iter().filter(|s| s.keeps(&id)).count(), 1, "{id}");
        }
    }

    #[test]
    fn parse_rejects_out_of_range() {
        assert_eq!(Shard::parse("2/4").unwrap(), Shard { index: 2, total: 4 });
        for bad in ["0/3", "4/3", "1/0", "x", "1/", "/2"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }
}
