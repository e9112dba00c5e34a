//! What a campaign did, as `campaign.json` in its report folder: enough
//! to merge the shards of one campaign (`chaos --partition K/N`, then
//! `merge`), as the matrix's shards merge, and to say whether a merged
//! campaign played every schedule it was asked for.
//!
//! A shard plays the schedules whose index is K-1 modulo N, so shards of
//! one campaign are disjoint and together play the whole range; merging
//! checks they are shards of the same campaign (seed, client, range,
//! steps, protocols) and that every shard is there exactly once.

use serde::{Deserialize, Serialize};

use super::Campaign;
use crate::suite::Partition;

/// One campaign (or, merged, all of its shards).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CampaignRecord {
    pub client: String,
    /// The client it was compared with (`--against`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against: Option<String>,
    pub seed: u64,
    /// The schedules asked for: `first..first + schedules`.
    pub first: u64,
    pub schedules: u64,
    pub steps: usize,
    /// `K/N` for one shard; the shards merged (`1/3, 2/3, 3/3`), or none.
    pub partitions: Vec<String>,
    pub protocols: Vec<ProtocolRecord>,
}

/// A campaign's runs of one protocol.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProtocolRecord {
    pub protocol: String,
    /// Schedules played or found not applicable.
    pub schedules: u64,
    pub played: u64,
    pub not_applicable: u64,
    pub unplayable: u64,
    /// Whether every schedule of the range (of the shard) was started: a
    /// `--minutes` budget may stop a campaign early.
    pub complete: bool,
    pub findings: Vec<FindingRecord>,
}

/// A finding, by where its files are.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FindingRecord {
    pub index: u64,
    /// The rule it broke.
    pub broke: String,
    /// The schedule's YAML, as written (in the shard's report folder).
    pub file: String,
}

impl ProtocolRecord {
    /// `campaign` of `protocol`, whose findings were written to `files`
    /// (one YAML per finding, in order); `complete` if it started every
    /// schedule it was asked to.
    pub fn new(protocol: &str, campaign: &Campaign, files: &[String], complete: bool) -> Self {
        ProtocolRecord {
            protocol: protocol.to_string(),
            schedules: campaign.schedules,
            played: campaign.played,
            not_applicable: campaign.not_applicable,
            unplayable: campaign.unplayable,
            complete,
            findings: campaign
                .findings
                .iter()
                .zip(files)
                .map(|(f, file)| FindingRecord {
                    index: f.index,
                    broke: f.broke.to_string(),
                    file: file.clone(),
                })
                .collect(),
        }
    }
}

/// How many schedules of `first..first + count` a shard plays.
pub fn shard_size(first: u64, count: u64, partition: Option<Partition>) -> u64 {
    match partition {
        None => count,
        Some(p) => (first..first.saturating_add(count))
            .filter(|i| holds_schedule(p, *i))
            .count() as u64,
    }
}

/// Whether schedule `index` is in shard `p`.
pub fn holds_schedule(p: Partition, index: u64) -> bool {
    index % u64::from(p.count) == u64::from(p.index - 1)
}

/// Why shards cannot be merged.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MergeError {
    #[error("no campaign to merge")]
    Empty,
    #[error("{0} is not a shard (no --partition K/N)")]
    NotAShard(usize),
    #[error("shard {0} is not of the same campaign as the first: {1} differs")]
    OtherCampaign(String, &'static str),
    #[error("shard {0} is there twice")]
    Twice(String),
    #[error("shards of {count} are missing {missing}")]
    Missing { count: u32, missing: String },
    #[error("{0} is not a partition (K/N)")]
    BadPartition(String),
}

/// The shards of one campaign as one record.
pub fn merge(shards: Vec<CampaignRecord>) -> Result<CampaignRecord, MergeError> {
    let Some(first) = shards.first() else {
        return Err(MergeError::Empty);
    };
    let mut seen: Vec<Partition> = Vec::new();
    for (i, shard) in shards.iter().enumerate() {
        let [partition] = shard.partitions.as_slice() else {
            return Err(MergeError::NotAShard(i + 1));
        };
        let p =
            Partition::parse(partition).map_err(|_| MergeError::BadPartition(partition.clone()))?;
        let differs = |what| Err(MergeError::OtherCampaign(partition.clone(), what));
        if shard.client != first.client {
            return differs("the client");
        }
        if shard.seed != first.seed {
            return differs("the seed");
        }
        if shard.against != first.against {
            return differs("the client compared with (--against)");
        }
        if (shard.first, shard.schedules) != (first.first, first.schedules) {
            return differs("the range of schedules");
        }
        if shard.steps != first.steps {
            return differs("steps per schedule");
        }
        let protocols = |r: &CampaignRecord| -> Vec<String> {
            r.protocols.iter().map(|p| p.protocol.clone()).collect()
        };
        if protocols(shard) != protocols(first) {
            return differs("the protocols");
        }
        if seen.first().is_some_and(|s| s.count != p.count) {
            return differs("the number of shards");
        }
        if seen.contains(&p) {
            return Err(MergeError::Twice(partition.clone()));
        }
        seen.push(p);
    }
    let count = seen[0].count;
    let missing: Vec<String> = (1..=count)
        .filter(|k| !seen.iter().any(|p| p.index == *k))
        .map(|k| format!("{k}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing {
            count,
            missing: missing.join(", "),
        });
    }
    seen.sort_by_key(|p| p.index);
    let mut merged = CampaignRecord {
        partitions: seen.iter().map(ToString::to_string).collect(),
        protocols: Vec::new(),
        ..first.clone()
    };
    for (i, protocol) in first.protocols.iter().enumerate() {
        let mut all = ProtocolRecord {
            protocol: protocol.protocol.clone(),
            schedules: 0,
            played: 0,
            not_applicable: 0,
            unplayable: 0,
            complete: true,
            findings: Vec::new(),
        };
        for shard in &shards {
            let p = &shard.protocols[i];
            all.schedules += p.schedules;
            all.played += p.played;
            all.not_applicable += p.not_applicable;
            all.unplayable += p.unplayable;
            all.complete &= p.complete;
            all.findings.extend(p.findings.iter().cloned());
        }
        all.findings.sort_by_key(|f| f.index);
        merged.protocols.push(all);
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(k: u32, n: u32, findings: &[u64]) -> CampaignRecord {
        let p = Partition { index: k, count: n };
        CampaignRecord {
            client: "reference".into(),
            against: None,
            seed: 7,
            first: 0,
            schedules: 10,
            steps: 20,
            partitions: vec![p.to_string()],
            protocols: vec![ProtocolRecord {
                protocol: "sotw".into(),
                schedules: shard_size(0, 10, Some(p)),
                played: shard_size(0, 10, Some(p)),
                not_applicable: 0,
                unplayable: 0,
                complete: true,
                findings: findings
                    .iter()
                    .map(|i| FindingRecord {
                        index: *i,
                        broke: "answered-once".into(),
                        file: format!("shard-{k}/s{i}.yaml"),
                    })
                    .collect(),
            }],
        }
    }

    #[test]
    fn shards_split_the_range_without_overlap() {
        let shards: Vec<Vec<u64>> = (1..=3)
            .map(|k| {
                (5..25)
                    .filter(|i| holds_schedule(Partition { index: k, count: 3 }, *i))
                    .collect()
            })
            .collect();
        let mut all: Vec<u64> = shards.concat();
        all.sort();
        assert_eq!(all, (5..25).collect::<Vec<_>>());
        assert_eq!(
            shards.iter().map(Vec::len).sum::<usize>(),
            (1..=3)
                .map(|k| shard_size(5, 20, Some(Partition { index: k, count: 3 })) as usize)
                .sum::<usize>()
        );
    }

    #[test]
    fn merged_shards_add_up_and_keep_every_finding() {
        let merged = merge(vec![shard(2, 2, &[3]), shard(1, 2, &[0, 8])]).unwrap();
        assert_eq!(merged.partitions, ["1/2", "2/2"]);
        let sotw = &merged.protocols[0];
        assert_eq!((sotw.schedules, sotw.played), (10, 10));
        assert_eq!(
            sotw.findings.iter().map(|f| f.index).collect::<Vec<_>>(),
            [0, 3, 8]
        );
        assert!(sotw.complete);
    }

    #[test]
    fn shards_that_do_not_make_one_campaign_are_refused() {
        assert_eq!(
            merge(vec![shard(1, 3, &[]), shard(3, 3, &[])]),
            Err(MergeError::Missing {
                count: 3,
                missing: "2/3".into()
            })
        );
        assert_eq!(
            merge(vec![shard(1, 2, &[]), shard(1, 2, &[])]),
            Err(MergeError::Twice("1/2".into()))
        );
        let mut other_seed = shard(2, 2, &[]);
        other_seed.seed = 8;
        assert_eq!(
            merge(vec![shard(1, 2, &[]), other_seed]),
            Err(MergeError::OtherCampaign("2/2".into(), "the seed"))
        );
        let mut compared = shard(2, 2, &[]);
        compared.against = Some("reference".into());
        assert_eq!(
            merge(vec![shard(1, 2, &[]), compared]),
            Err(MergeError::OtherCampaign(
                "2/2".into(),
                "the client compared with (--against)"
            ))
        );
        let mut whole = shard(1, 1, &[]);
        whole.partitions.clear();
        assert_eq!(merge(vec![whole]), Err(MergeError::NotAShard(1)));
    }
}
